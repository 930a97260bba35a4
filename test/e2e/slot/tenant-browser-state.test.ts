// What Chromium keeps of a secure origin — HSTS, kept-alive connections (the
// socket pool) — is per incognito context: two contexts leased for two
// requests, and one tries to pass a bit to the other. This needs https on
// loopback with a certificate Chromium takes as valid, which the service's own
// Chromium has no reason to have: the test makes a throw-away one (openssl) and
// trusts it by its key (BrowserHost's testTrustedSpki, Chromium's
// --ignore-certificate-errors-spki-list) in a BrowserHost of its own, launched
// as the slot process launches it, behind a real egress guard with a context port
// per lease. Chromium keeps HSTS only for names (never for an IP address or
// localhost), so the origin is a name the guard's injected resolver answers
// with 127.0.0.1. (Shared dictionaries need a certificate with a known root or
// localhost: their test is in tenant-channels.test.ts, over localhost.)
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { TLSSocket } from 'node:tls';
import type { BrowserHost } from '../../../src/slot/browser/browser-host.js';
import type { PageLease } from '../../../src/slot/browser/lease.js';
import { startGuardedHost, type GuardedHost } from '../../helpers/guarded-host.js';
import { testCertificate } from '../../helpers/tls.js';

/** A name, not an address or localhost: Chromium keeps HSTS only for names. */
const HOST = 'tenants.pagescript.test';

/** One request seen by the fixture: how it came (http or https), on which connection, with which headers. */
interface Seen {
  proto: 'http' | 'https';
  path: string;
  connection: number;
  headers: IncomingMessage['headers'];
}

/**
 * Serves http and https on one port (the first byte tells TLS from HTTP), as
 * an HSTS upgrade keeps the port: http://h:P/ becomes https://h:P/.
 */
class DualFixture {
  readonly seen: Seen[] = [];
  readonly #connections = new WeakMap<object, number>();
  #nextConnection = 1;
  #front: Server | undefined;
  readonly #sockets = new Set<Socket>();
  port = 0;
  spki = '';

  async start(): Promise<void> {
    const made = testCertificate(HOST, `DNS:${HOST}`);
    this.spki = made.spki;
    const http = createHttpServer((req, res) => this.#serve('http', req, res));
    const https = createHttpsServer({ key: made.key, cert: made.cert }, (req, res) => this.#serve('https', req, res));
    this.#front = createTcpServer((s) => {
      this.#sockets.add(s);
      s.once('close', () => this.#sockets.delete(s));
      s.on('error', () => s.destroy());
      s.once('readable', () => {
        const first = s.read(1) as Buffer | null;
        if (!first) return void s.destroy();
        s.unshift(first);
        (first[0] === 0x16 ? https : http).emit('connection', s);
      });
    });
    await new Promise<void>((r) => this.#front?.listen(0, '127.0.0.1', r));
    this.port = (this.#front.address() as { port: number }).port;
  }

  #connection(socket: object): number {
    let n = this.#connections.get(socket);
    if (n === undefined) {
      n = this.#nextConnection++;
      this.#connections.set(socket, n);
    }
    return n;
  }

  #serve(proto: 'http' | 'https', req: IncomingMessage, res: ServerResponse): void {
    const path = req.url ?? '/';
    this.seen.push({
      proto,
      path,
      connection: this.#connection((req.socket as TLSSocket | Socket) ?? {}),
      headers: req.headers,
    });
    const route = path.split('?')[0];
    if (route === '/hsts') {
      res.writeHead(200, {
        'content-type': 'text/html',
        ...(proto === 'https' ? { 'strict-transport-security': 'max-age=3600' } : {}),
      });
      res.end('<title>hsts</title>');
      return;
    }
    if (route === '/slow') {
      const timer = setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(4096)), 1000);
      res.once('close', () => clearTimeout(timer));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<title>${proto}</title>`);
  }

  url(proto: 'http' | 'https', path: string): string {
    return `${proto}://${HOST}:${this.port}${path}`;
  }

  /** The requests whose path starts with prefix. */
  requests(prefix: string): Seen[] {
    return this.seen.filter((s) => s.path.startsWith(prefix));
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((r) => (this.#front ? this.#front.close(() => r()) : r()));
  }
}

const fixture = new DualFixture();
let guarded: GuardedHost;
let host: BrowserHost;

before(async () => {
  await fixture.start();
  guarded = await startGuardedHost({
    fixturePort: fixture.port,
    // SECURITY (of the test): only the fixture's name resolves, to loopback.
    resolve: (name) =>
      name === HOST
        ? Promise.resolve([{ address: '127.0.0.1', family: 4 }])
        : Promise.reject(new Error('no such name')),
    testTrustedSpki: [fixture.spki],
  });
  host = guarded.host;
});
after(async () => {
  await guarded.close();
  await fixture.close();
});

/** Two requests' contexts at once, closed whatever the test did. */
async function twoRequests(name: string, run: (a: PageLease, b: PageLease) => Promise<void>): Promise<void> {
  const a = await host.lease(`${name}-a`);
  try {
    const b = await host.lease(`${name}-b`);
    try {
      await run(a, b);
    } finally {
      await b.close();
    }
  } finally {
    await a.close();
  }
}

describe('state Chromium keeps of a secure origin is per request', () => {
  test("HSTS: A's page is told Strict-Transport-Security; B's plain http request to the same host is not upgraded", async () => {
    await twoRequests('hsts', async (a, b) => {
      const r = await a.page.goto(fixture.url('https', '/hsts'));
      assert.equal(r?.status(), 200);
      // Control: A's own plain http request is upgraded, so HSTS was kept (an un-upgraded B below means per context).
      await a.page.goto(fixture.url('http', '/plain?who=a'));
      assert.deepEqual(
        fixture.requests('/plain?who=a').map((s) => s.proto),
        ['https'],
        "A's http request was upgraded",
      );
      await b.page.goto(fixture.url('http', '/plain?who=b'));
      assert.deepEqual(
        fixture.requests('/plain?who=b').map((s) => s.proto),
        ['http'],
        "B's http request went as http",
      );
      assert.equal(b.page.url(), fixture.url('http', '/plain?who=b'));
    });
  });

  test("the socket pool: B's requests never arrive on a connection A's requests opened, while A's are kept alive", async () => {
    await twoRequests('sockets', async (a, b) => {
      await a.page.goto(fixture.url('https', '/pool?who=a1'));
      await a.page.evaluate(`fetch('/pool?who=a2').then((r) => r.text())`);
      const ofA = new Set(fixture.requests('/pool?who=a').map((s) => s.connection));
      // Control: Chromium does keep A's connection alive and use it again (so a B that never shares one is per context).
      assert.equal(ofA.size, 1, "A's two requests came on one kept-alive connection");
      const aBefore = a.egress.stats().connections;
      await b.page.goto(fixture.url('https', '/pool?who=b1'));
      await b.page.evaluate(`fetch('/pool?who=b2').then((r) => r.text())`);
      const ofB = fixture.requests('/pool?who=b').map((s) => s.connection);
      assert.equal(ofB.length, 2);
      for (const c of ofB) assert.ok(!ofA.has(c), `B's request came on A's connection ${c}`);
      // The guard: B's connections came to B's own port, and A's identity carried none of them.
      assert.equal(a.egress.stats().connections, aBefore, "nothing of B's went through A's identity");
      assert.ok(b.egress.stats().connections >= 1);
    });
  });
});

describe('state Chromium keeps per browser', () => {
  test("the network quality estimate: A's page making slow requests does not change what B's page reads in navigator.connection", async () => {
    // Chromium's estimate is one for the whole browser, and every page reads it. It learns only from requests whose
    // remote end is public, and every request's remote end is the guard on loopback: it should never move.
    await twoRequests('quality', async (a, b) => {
      const read = (): Promise<unknown> =>
        b.page.evaluate(`(() => { const c = navigator.connection; return [c.effectiveType, c.rtt, c.downlink] })()`);
      await b.page.goto(fixture.url('http', '/plain?who=b'));
      const before = await read();
      await a.page.goto(fixture.url('http', '/plain?who=a'));
      for (let round = 0; round < 4; round++) {
        await a.page.evaluate(
          `Promise.all(Array.from({ length: 6 }, (_, i) => fetch('/slow?' + ${round} + '-' + i).then((r) => r.text())))`,
        );
      }
      assert.equal(fixture.requests('/slow').length, 24, "A's slow requests were made");
      assert.deepEqual(await read(), before);
    });
  });

  test("page.emulateNetworkConditions on A's page does not throttle B's page, nor take it offline", async () => {
    // The membrane passes the call on to Puppeteer as this does (src/slot/membrane/methods/emulation.ts): DevTools'
    // Network.emulateNetworkConditions on the page's own sessions. A's page sees it; B's must not.
    await twoRequests('conditions', async (a, b) => {
      const read = (p: PageLease): Promise<unknown> =>
        p.page.evaluate(`(() => { const c = navigator.connection; return [c.effectiveType, c.rtt, c.downlink] })()`);
      const fetchPlain = (p: PageLease, who: string): Promise<unknown> =>
        p.page.evaluate(`fetch('/plain?who=${who}').then(() => 'ok', (e) => e.name)`);
      await a.page.goto(fixture.url('http', '/plain?who=a'));
      await b.page.goto(fixture.url('http', '/plain?who=b'));
      const before = await read(b);
      await a.page.emulateNetworkConditions({ offline: false, download: 50_000, upload: 50_000, latency: 2_000 });
      assert.notDeepEqual(await read(a), before, "A's page is throttled");
      assert.deepEqual(await read(b), before, "B's page is not");
      await a.page.emulateNetworkConditions({ offline: true, download: -1, upload: -1, latency: 0 });
      assert.equal(await fetchPlain(a, 'a-offline'), 'TypeError', "A's page is offline");
      assert.equal(await fetchPlain(b, 'b-online'), 'ok', "B's page is not");
      assert.equal(fixture.requests('/plain?who=b-online').length, 1);
      assert.equal(fixture.requests('/plain?who=a-offline').length, 0);
    });
  });
});
