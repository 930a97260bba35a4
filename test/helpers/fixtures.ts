// A fixture web server on 127.0.0.1 for end-to-end tests: named routes, the
// saved real pages of test/fixtures/real-pages, and a hit counter per path.
import { readFileSync, readdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Route = (req: IncomingMessage, res: ServerResponse) => void;

/** Lets a saved page load nothing beyond itself (see test/fixtures/real-pages/README.md). */
export const OFFLINE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

export const REAL_PAGES_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'real-pages');

export function realPageNames(): string[] {
  return readdirSync(REAL_PAGES_DIR)
    .filter((f) => f.endsWith('.html'))
    .sort();
}

export function html(body: string, status = 200, headers: Record<string, string> = {}): Route {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers });
    res.end(body);
  };
}

export const EXAMPLE_DOMAIN_HTML = `<!doctype html>
<html><head><title>Example Domain</title></head>
<body><div><h1>Example Domain</h1>
<p>This domain is for use in illustrative examples in documents.</p>
<p><a href="https://www.iana.org/domains/example">More information...</a></p>
</div></body></html>`;

export class FixtureServer {
  readonly #server: Server;
  readonly #routes = new Map<string, Route>();
  readonly hits = new Map<string, number>();
  port = 0;

  constructor(routes: Record<string, Route> = {}) {
    for (const [p, r] of Object.entries(routes)) this.#routes.set(p, r);
    this.#server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      this.hits.set(path, (this.hits.get(path) ?? 0) + 1);
      const route = this.#routes.get(path);
      if (route) return route(req, res);
      const real = /^\/real\/([\w.-]+\.html)$/.exec(path);
      if (real) {
        try {
          const body = readFileSync(join(REAL_PAGES_DIR, real[1] as string));
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': OFFLINE_CSP });
          res.end(body);
          return;
        } catch {
          // fall through to 404
        }
      }
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    });
  }

  route(path: string, r: Route): void {
    this.#routes.set(path, r);
  }

  url(path = '/'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  get allowEntry(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const a = this.#server.address();
    this.port = typeof a === 'object' && a ? a.port : 0;
    return this;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
