// GET /playground: a page to write a script, run it against POST /api/scrape
// and read the answer. The page, its script and its stylesheet (CodeMirror
// bundled in; built by tsup from playground/ into dist/playground/) are all
// served from here: nothing is loaded from elsewhere. Off with PLAYGROUND=off.
//
// The page is front-only: it calls the public API from the browser with the
// key the person types, like any other client; it has no privilege of its own.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { ApiError } from '../../common/errors.js';
import { HTML_TYPE, sendError } from '../http/reply.js';

export const PLAYGROUND_PATH = '/playground';
const SCRIPT_PATH = '/playground/playground.js';
const STYLE_PATH = '/playground/playground.css';

/**
 * SECURITY: scripts only from this origin (no inline script, no eval); styles
 * from this origin and the one <style> CodeMirror adds, which carries this
 * response's nonce; requests only to this origin; data: images for CodeMirror's
 * lint icons. No framing (clickjacking a page that holds a key), no <base>, no
 * form posts anywhere.
 */
export function playgroundCsp(nonce: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const COMMON_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  // The page's address says nothing about the key, but nothing needs the referrer either.
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

interface Asset {
  readonly type: string;
  readonly body: Buffer;
  /** Compressed off the event loop at the first request that accepts gzip, not at every start. */
  gzip(): Promise<Buffer>;
  readonly etag: string;
}

const gzip = promisify(gzipCallback);

function asset(type: string, body: Buffer): Asset {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  let gzipped: Promise<Buffer> | undefined;
  return { type, body, etag, gzip: () => (gzipped ??= gzip(body)) };
}

/** Finds dist/playground from here, whether running from src/ (tests) or dist/ (service). */
function findAssetDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    for (const candidate of [join(dir, 'dist', 'playground'), join(dir, 'playground')]) {
      if (existsSync(join(candidate, 'playground.global.js'))) return candidate;
    }
    dir = dirname(dir);
  }
  throw new Error(
    'dist/playground/playground.global.js is missing: run `npm run build` (npm start and npm test build it)',
  );
}

function page(nonce: string): string {
  // The nonce on the script element is how the script learns it (HTMLScriptElement.nonce) to give it to CodeMirror.
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>pagescript playground</title>
<link rel="stylesheet" href="playground/playground.css">
<script src="playground/playground.js" defer nonce="${nonce}"></script>
</head>
<body>
<header><h1>pagescript <span>playground</span></h1>
<nav aria-label="Service"><a href="docs">API documentation</a><a href="openapi.json">OpenAPI</a></nav></header>
<noscript><p>The playground needs JavaScript. The API works without it: see <a href="docs">the API documentation</a>.</p></noscript>
<main>
<section class="pg-request" aria-labelledby="pg-request-h">
<h2 id="pg-request-h">Request</h2>
<form id="pg-form" novalidate>
<div class="field"><label for="pg-example">Start from an example</label>
<select id="pg-example"><option value="">Choose an example…</option></select></div>
<div class="field"><label for="pg-url">URL</label>
<input id="pg-url" type="url" name="url" required spellcheck="false" autocomplete="url" placeholder="https://example.com/"></div>
<div class="field"><span class="label" id="pg-script-label">Script</span>
<div id="pg-editor" class="pg-editor"></div>
<span class="hint" id="pg-script-help">The body of an async function, with <code>page</code> (Puppeteer 24), <code>cheerio</code>, <code>targetUrl</code> and <code>console.log</code>. Ctrl+Space completes, Ctrl+Enter (Cmd+Enter) runs, Tab leaves the editor.</span></div>
<fieldset><legend>Output format</legend>
<label><input type="radio" name="format" value="json" checked> JSON</label>
<label><input type="radio" name="format" value="html"> HTML (the string the script returns)</label></fieldset>
<div class="row">
<div class="field"><label for="pg-key">API key</label>
<input id="pg-key" type="password" autocomplete="off" spellcheck="false" aria-describedby="pg-key-help">
<span class="hint" id="pg-key-help">Kept in this tab only (sessionStorage), sent only to this service.</span></div>
<div class="field"><label for="pg-host">Gateway host</label>
<input id="pg-host" type="text" spellcheck="false" aria-describedby="pg-host-help">
<span class="hint" id="pg-host-help">Sent as <code>X-Gateway-Host</code>.</span></div>
</div>
<div class="actions">
<button type="submit" id="pg-run" class="primary">Run</button><span class="hint"><kbd>Ctrl</kbd>+<kbd>Enter</kbd></span>
<button type="button" id="pg-curl-copy">Copy as curl</button>
<label><input type="checkbox" id="pg-curl-key"> Put my key in the command (else <code>$KEY</code>)</label>
</div>
<div class="field"><label for="pg-curl">The same request with curl</label>
<textarea id="pg-curl" readonly rows="6" spellcheck="false"></textarea>
<span class="hint" id="pg-curl-status" role="status"></span></div>
</form>
</section>
<section class="pg-result" aria-labelledby="pg-result-h">
<h2 id="pg-result-h">Result</h2>
<p id="pg-status" role="status">Not run yet.</p>
<div id="pg-error" hidden><h3>Error</h3><pre id="pg-error-text"></pre><button type="button" id="pg-error-goto" hidden></button></div>
<div id="pg-timing" hidden><h3>Time</h3>
<dl><dt><code>executionTime</code></dt><dd id="pg-exec-time"></dd></dl>
<ul id="pg-timing-parts" aria-label="Server-Timing: where the time went"></ul>
<h3>Cost</h3>
<dl id="pg-usage" aria-label="What the request cost (X-Usage-* headers)"></dl></div>
<div id="pg-data-box" hidden><h3 id="pg-data-label">Data</h3>
<pre id="pg-data" class="pg-out" tabindex="0" aria-labelledby="pg-data-label"></pre></div>
<h3 id="pg-logs-label">Logs</h3>
<p id="pg-logs-empty" class="pg-muted">No logs.</p>
<ol id="pg-logs" aria-labelledby="pg-logs-label"></ol>
</section>
</main>
</body></html>
`;
}

export interface PlaygroundRoutes {
  /** Answers the playground's paths; false for any other path. */
  handle(path: string, req: IncomingMessage, res: ServerResponse): boolean;
}

/** `fail` answers a request that failed inside the service: 500, logged and counted once. */
export function playgroundRoutes(fail: (res: ServerResponse, e: unknown) => void): PlaygroundRoutes {
  // Read once, at start, so a missing build stops the service instead of failing a request (~0.5 MB, 0.16 MB gzipped).
  const dir = findAssetDir();
  const assets = new Map([
    [SCRIPT_PATH, asset('text/javascript; charset=utf-8', readFileSync(join(dir, 'playground.global.js')))],
    [STYLE_PATH, asset('text/css; charset=utf-8', readFileSync(join(dir, 'playground.css')))],
  ]);

  async function sendAsset(req: IncomingMessage, res: ServerResponse, a: Asset): Promise<void> {
    const headers: Record<string, string> = {
      ...COMMON_HEADERS,
      'Content-Type': a.type,
      ETag: a.etag,
      // Revalidated each time (cheap: 304), so a new build is picked up at once.
      'Cache-Control': 'no-cache',
      Vary: 'Accept-Encoding',
    };
    if (req.headers['if-none-match'] === a.etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    const gzipped = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    const body = gzipped ? await a.gzip() : a.body;
    if (gzipped) headers['Content-Encoding'] = 'gzip';
    if (res.destroyed) return;
    res.writeHead(200, { ...headers, 'Content-Length': String(body.length) });
    res.end(body);
  }

  return {
    handle(path, req, res) {
      if (path !== PLAYGROUND_PATH && path !== SCRIPT_PATH && path !== STYLE_PATH) return false;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendError(res, new ApiError('METHOD_NOT_ALLOWED', 'Method not allowed: use GET'), { Allow: 'GET, HEAD' });
        return true;
      }
      if (path === PLAYGROUND_PATH) {
        // A fresh nonce per response: the page is never cached.
        const nonce = randomBytes(16).toString('base64');
        const body = page(nonce);
        res.writeHead(200, {
          ...COMMON_HEADERS,
          'Content-Type': HTML_TYPE,
          'Content-Length': String(Buffer.byteLength(body)),
          'Content-Security-Policy': playgroundCsp(nonce),
          'Cache-Control': 'no-store',
        });
        res.end(body);
        return true;
      }
      const a = assets.get(path);
      if (a === undefined) return false;
      sendAsset(req, res, a).catch((e: unknown) => fail(res, e));
      return true;
    },
  };
}
