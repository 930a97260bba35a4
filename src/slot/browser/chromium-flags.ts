// Chromium's command line: what every slot's Chromium is started with, the
// proxy each context gets, and the renderers' heap limit.

/**
 * The V8 heap of each renderer, in MiB, when no page memory limit says otherwise.
 * With PAGE_MEMORY_MB the heap limit is set above it (see rendererHeapMb): near its
 * own limit V8 collects garbage for a long time before it gives up, while the page
 * memory watchdog ends the page within a poll once the request's memory passes PAGE_MEMORY_MB.
 */
export const RENDERER_HEAP_MB = 512;

/** The renderers' V8 heap limit for a page memory limit: twice it, so the watchdog acts first. */
export function rendererHeapMb(pageMemoryMb: number): number {
  return Math.max(RENDERER_HEAP_MB, 2 * pageMemoryMb);
}

/**
 * Chromium features that cost every new context work no one sees (figures in
 * docs/performance.md):
 * - WebUIOmniboxPopup, WebUIOmniboxAimPopup: every new context opens a window,
 *   and each window loads the address bar's two popups (chrome://omnibox-popup.
 *   top-chrome) in a renderer of its own. Without them a fresh context costs
 *   one renderer.
 * - SpareRendererForSitePerProcess: Chromium keeps a renderer started ahead for
 *   the browser context used last, which here is the one about to be closed, so
 *   it is started and thrown away per request. Off, the count of Chromium
 *   processes at rest is steady.
 */
export const PER_CONTEXT_FEATURES_OFF = [
  'WebUIOmniboxPopup',
  'WebUIOmniboxAimPopup',
  'SpareRendererForSitePerProcess',
] as const;

/** A bypass list that removes Chromium's implicit loopback bypass, and adds none. */
const PROXY_BYPASS_NONE = '<-loopback>';

/** A context's proxy: the guard's port for that context alone, and no bypass. */
export function contextProxy(port: number): { proxyServer: string; proxyBypassList: string[] } {
  return { proxyServer: `http://127.0.0.1:${port}`, proxyBypassList: [PROXY_BYPASS_NONE] };
}

/**
 * The headless shell's GPU process (the display compositor; --disable-gpu: no
 * GPU) and its network service run as the browser process does: the same user,
 * its namespaces, no seccomp filter (read in /proc here; only renderers are
 * sandboxed). Run in the browser process, they cross no privilege boundary and
 * save two processes per Chromium, their memory and their IPC with the browser on
 * every request (docs/performance.md). The cost is crash isolation: a crash in
 * either is the slot's Chromium crashing, which fails its one request and is
 * relaunched (docs/chromium.md). The full browser keeps them apart.
 */
export const SHELL_IN_PROCESS_ARGS = ['--in-process-gpu', '--enable-features=NetworkServiceInProcess2'] as const;

/**
 * `sandboxed`: Chromium's own sandbox (seccomp-bpf, namespaces) is on. It is
 * off only where it cannot start (as root, or a kernel or container without user
 * namespaces); see Launcher#launch (launch.ts).
 */
export function chromiumArgs(guardPort: number, sandboxed = true, heapMb: number = RENDERER_HEAP_MB): string[] {
  return [
    ...(sandboxed ? [] : ['--no-sandbox']),
    // Keep Chromium from calling home on a closed network.
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--no-default-browser-check',
    '--disable-domain-reliability',
    '--disable-breakpad',
    '--metrics-recording-only',
    // SECURITY: no QUIC/UDP around the proxy.
    '--disable-quic',
    // SECURITY: all traffic through the egress guard; "<-loopback>" removes the
    // implicit bypass, so loopback and link-local go through the guard too. This
    // browser-wide port carries only Chromium's own requests, and the guard lets
    // none of them out; each request's context has a proxy port of its own (see
    // contextProxy below).
    `--proxy-server=http://127.0.0.1:${guardPort}`,
    `--proxy-bypass-list=${PROXY_BYPASS_NONE}`,
    // SECURITY: Chromium resolves no names itself (the guard does); the proxy is an IP literal.
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    // SECURITY: WebRTC may not send UDP around the proxy (STUN to internal hosts).
    // The full browser reads the first (a Chrome preference); the headless shell,
    // which has no preferences, knows only the second (content's switch) and
    // without it sent STUN to any address a page named (egress.test.ts, webrtc).
    '--webrtc-ip-handling-policy=disable_non_proxied_udp',
    '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
    `--disable-features=WebRtcHideLocalIpsWithMdns,DnsOverHttps,AsyncDns,MediaRouter,OptimizationHints,Translate,${PER_CONTEXT_FEATURES_OFF.join(',')}`,
    // A page's JavaScript heap is bounded (a backstop: PAGE_MEMORY_MB's watchdog,
    // src/slot/browser/page-memory.ts, acts first and bounds all of a page's memory).
    `--js-flags=--max-old-space-size=${heapMb}`,
    // SECURITY: screen and tab capture (getDisplayMedia) are refused at once. The
    // full browser has no picker to ask with: it hung the page or crashed the whole
    // browser (every tenant's request) trying to list screens without a display.
    '--auto-reject-capture',
    '--auto-reject-this-tab-capture',
    // SECURITY: the full browser keeps one picture-in-picture window for all
    // contexts: one request opening a document picture-in-picture window closed
    // another's (a bit between requests), and the window is one more page. Off.
    '--disable-blink-features=DocumentPictureInPictureAPI',
    // SECURITY: a video's picture-in-picture is the same one window (on the full
    // browser B's video closed A's); no feature switch removes it, but this Blink
    // setting is the one the embedder forbids it with: applied by the browser to
    // every page it makes (frames of other sites, about:blank and sandboxed frames,
    // popups), kept through emulation changes, it makes pictureInPictureEnabled
    // false and requestPictureInPicture() reject (NotSupportedError), before any
    // user-activation check. docs/security.md, "Tenants and the shared browser". Chromium keeps
    // only the last of a repeated switch: any other Blink setting goes into this one
    // (test/unit/slot/chromium-args.test.ts).
    '--blink-settings=pictureInPictureEnabled=false',
    '--disable-gpu',
    '--disable-dev-shm-usage',
    '--mute-audio',
    '--hide-scrollbars',
    // SECURITY: the headless shell has no popup blocker (that is the full browser's,
    // kept on below): a page could open hundreds of windows per request. Scripts
    // are never given popups, so the shell opens none (window.open returns null).
    // The full browser does not know this switch.
    '--block-new-web-contents',
    // The headless shell sends no Accept-Language and gives navigator.languages
    // ['en-US'] without it; with it both Chromiums say en-US, en (docs/chromium.md).
    '--accept-lang=en-US,en',
  ];
}
