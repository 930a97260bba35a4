// Launching a slot's Chromium: a generation (one Chromium process and what it
// has served), started with its flags, with its own sandbox when it can have
// it, and the DevTools messages dropped over the size limit counted.
import type { Browser } from 'puppeteer';
import type { ChromiumMode } from '../../common/config.js';
import type { Logger } from '../../common/log.js';
import type { DroppedMessage } from './cdp-transport.js';
import { chromiumArgs, SHELL_IN_PROCESS_ARGS } from './chromium-flags.js';
import { startChromium, type ChromiumProcess } from './chromium-process.js';

/** Wait between relaunch attempts after Chromium dies. */
export const RELAUNCH_BACKOFF_MS = 500;
/** Dropped DevTools messages logged one by one per slot; past that, every 1000th. */
const DROPPED_LOGGED = 20;

/** One Chromium process and what it has served. */
export interface Generation {
  readonly chromium: ChromiumProcess;
  readonly browser: Browser;
  /** Contexts made in it, spares included. */
  served: number;
  /** Contexts open in it now, spares included. */
  live: number;
  /** Replaced: it makes no new contexts and is closed when its last one closes. */
  retiring: boolean;
  successor: Promise<void> | undefined;
}

export interface LaunchOptions {
  readonly executablePath: string;
  /**
   * Where `executablePath` is Chromium's execute-only copy: the readable binary,
   * taken (sandboxed, and dumpable) where the copy cannot start with its sandbox.
   */
  readonly readablePath?: string;
  /** `shell`: chromium-headless-shell, launched in Puppeteer's `headless: 'shell'`; `full`: the new headless mode. */
  readonly chromium: ChromiumMode;
  /** The guard's browser-wide port, for Chromium's own requests (all refused). */
  readonly guardPort: number;
  readonly protocolTimeoutMs: number;
  /** The renderers' V8 heap limit (RENDERER_HEAP_MB when absent). */
  readonly rendererHeapMb?: number;
  /** Chromium's stderr (where a renderer's out-of-memory death is written), as it comes. */
  readonly onOutput?: (text: string) => void;
  readonly logger: Logger;
  /** The memory cgroup Chromium is started in (its cgroup.procs), where the kernel holds the page's memory. */
  readonly cgroupProcs?: string;
  /** The shell that puts Chromium in that cgroup (an execute-only copy, where there is one); /bin/sh when absent. */
  readonly shellPath?: string;
  /**
   * Tests only, never from configuration: SPKI hashes (base64 SHA-256) of test
   * certificates Chromium takes as valid, so an https fixture on loopback can
   * show what Chromium keeps of a secure origin (HSTS, shared dictionaries).
   */
  readonly testTrustedSpki?: readonly string[];
}

/** Closes the pages Chromium opened at launch (its default context's blank page). */
async function closeStartupPages(browser: Browser, logger: Logger): Promise<void> {
  try {
    await Promise.all((await browser.pages()).map((p) => p.close()));
  } catch (e) {
    // Only memory is lost: the page stays blank.
    logger.warn({ err: String(e) }, "closing Chromium's startup page failed");
  }
}

/** The warning that Chromium runs without its sandbox was logged in this process. */
let warnedUnsandboxed = false;

export class Launcher {
  readonly #opts: LaunchOptions;
  /** SECURITY: Chromium runs in its own sandbox unless it cannot (as root it refuses to). */
  #sandboxed = process.getuid?.() !== 0;
  /** Chromium started once: whether it can run sandboxed here is known. */
  #sandboxTried = false;
  #dropped = 0;
  /** The Chromium started: the execute-only copy, or the readable binary once the copy could not start sandboxed. */
  #path: string;

  constructor(opts: LaunchOptions) {
    this.#opts = opts;
    this.#path = opts.executablePath;
  }

  /** Chromium runs with its own sandbox on (false only where it could not start with it). */
  get sandboxed(): boolean {
    return this.#sandboxed;
  }

  /** A new generation; onDisconnected is called once when its Chromium's DevTools connection is gone. */
  async launch(onDisconnected: (gen: Generation) => void): Promise<Generation> {
    const t0 = Date.now();
    if (!this.#sandboxed) this.#warnUnsandboxed('running as root');
    let chromium: ChromiumProcess;
    try {
      chromium = await this.#start();
    } catch (e) {
      if (!this.#sandboxed || this.#sandboxTried) throw e;
      // Chromium that cannot set up its sandbox (no user namespaces, as in a
      // container without a seccomp profile that allows them) exits at once; over
      // a pipe Puppeteer then reports only "Target closed". So: one more try with
      // the sandbox, then (where it was an execute-only copy) the readable binary
      // with the sandbox, and if that fails too, a try without it. If that one starts,
      // Chromium runs unsandboxed (the egress guard, the fresh context and the
      // slot process's user still hold), a warning is logged once, and /health says so.
      try {
        chromium = await this.#start();
      } catch {
        const readable = await this.#startReadable();
        if (readable) chromium = readable;
        else {
          chromium = await this.#start(false).catch(() => {
            throw e;
          });
          this.#sandboxed = false;
          this.#warnUnsandboxed(`Chromium did not start with its sandbox: ${String(e).split('\n')[0]}`);
        }
      }
    }
    this.#sandboxTried = true;
    const browser = chromium.browser;
    // Chromium opens a blank page in its default context at launch (Puppeteer's
    // launch arguments ask for one); nothing uses it, and its renderer is ~18 MB
    // of PSS per Chromium at rest (measured): it is closed.
    await closeStartupPages(browser, this.#opts.logger);
    const gen: Generation = {
      chromium,
      browser,
      served: 0,
      live: 0,
      retiring: false,
      successor: undefined,
    };
    browser.once('disconnected', () => onDisconnected(gen));
    this.#opts.logger.info({ ms: Date.now() - t0, pid: chromium.pid, sandboxed: this.#sandboxed }, 'chromium started');
    return gen;
  }

  async #start(sandboxed = this.#sandboxed): Promise<ChromiumProcess> {
    // Started by us rather than puppeteer.launch, for a DevTools pipe with a bound
    // on one message's size (src/slot/browser/chromium-process.ts, cdp-transport.ts).
    return await startChromium({
      executablePath: this.#path,
      ...(this.#opts.cgroupProcs === undefined ? {} : { cgroupProcs: this.#opts.cgroupProcs }),
      ...(this.#opts.shellPath === undefined ? {} : { shellPath: this.#opts.shellPath }),
      // The shell knows only the old headless mode (--headless); the full browser runs the new one.
      headless: this.#opts.chromium === 'shell' ? 'shell' : true,
      args: [
        ...chromiumArgs(this.#opts.guardPort, sandboxed, this.#opts.rendererHeapMb),
        ...(this.#opts.chromium === 'shell' ? SHELL_IN_PROCESS_ARGS : []),
        ...(this.#opts.testTrustedSpki?.length
          ? [`--ignore-certificate-errors-spki-list=${this.#opts.testTrustedSpki.join(',')}`]
          : []),
      ],
      // SECURITY: keep Chromium's popup blocker on.
      ignoreDefaultArgs: ['--disable-popup-blocking'],
      protocolTimeoutMs: this.#opts.protocolTimeoutMs,
      // Puppeteer's own default, so pasted Puppeteer code sees the page it expects.
      defaultViewport: { width: 800, height: 600 },
      ...(this.#opts.onOutput ? { onOutput: this.#opts.onOutput } : {}),
      onDropped: (d) => this.#droppedMessage(d),
    });
  }

  /**
   * Where the execute-only copy could not start with Chromium's sandbox (its
   * SUID helper refused, say): the readable binary with its sandbox, from then
   * on. Chromium's own sandbox is kept before its processes' privacy from the
   * slot's user; the warning says so. undefined when there is none, or it failed too.
   */
  async #startReadable(): Promise<ChromiumProcess | undefined> {
    const readable = this.#opts.readablePath;
    if (readable === undefined || this.#path === readable) return undefined;
    this.#path = readable;
    const chromium = await this.#start().catch(() => undefined);
    if (chromium)
      this.#opts.logger.warn(
        { executablePath: readable },
        "Chromium's execute-only copy did not start with its sandbox: it runs from its readable binary, dumpable by the slot's user",
      );
    return chromium;
  }

  /**
   * A DevTools message over MAX_CDP_MESSAGE_BYTES was dropped (a response was
   * answered with an error for its call). Logged up to DROPPED_LOGGED times per
   * slot, then counted only: a page can make such messages in a loop.
   */
  #droppedMessage(d: DroppedMessage): void {
    this.#dropped++;
    if (this.#dropped <= DROPPED_LOGGED || this.#dropped % 1000 === 0)
      this.#opts.logger.warn(
        { bytes: d.bytes, ...(d.method ? { event: d.method } : { call: d.id ?? 'unknown' }), dropped: this.#dropped },
        'devtools message over the size limit dropped',
      );
  }

  /** Once per process: Chromium runs without its own sandbox, and why. */
  #warnUnsandboxed(reason: string): void {
    // One warning for the slot process, whichever of its Chromiums (a relaunch, a recycle) tells it first.
    if (warnedUnsandboxed) return;
    warnedUnsandboxed = true;
    this.#opts.logger.warn(
      { reason },
      "chromium runs without its own sandbox (see docs/container.md, Chromium's sandbox in a container); /health says chromiumSandbox: false",
    );
  }
}
