// Upstream proxies end to end (issue 23): real proxies on loopback (tinyproxy
// for HTTP CONNECT with BasicAuth, microsocks for SOCKS5 with RFC 1929), a
// fixture target that records who connected and what it was sent, and the
// service's own guard in front of them. The proxies connect out from
// 127.0.0.2, so the fixture tells a request that came through a proxy from
// one that came straight from the guard (127.0.0.1). Every target is loopback;
// names resolve from the test's table, never from DNS. A local target never goes
// through a proxy, so the fixture stands in for a public server (the egress
// seam's publicTargets); a second one, allow-listed, is the local network.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../../src/front/tenancy/keyfile.js';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { PROXY_OUTGOING_ADDRESS, Socks5Proxy, TinyProxy } from '../../helpers/proxies.js';
import { capturingLogger, startTestService, TEST_KEY, type TestService } from '../../helpers/service.js';
import { memoryHolds } from '../../helpers/proc-memory.js';
import { descendants, freePort } from '../../helpers/system.js';

const HTTP_PASSWORD = 'tp-Secret-8c1f2e';
const SOCKS_PASSWORD = 'sx-Secret-4b7d9a';
const PASSWORDS = [HTTP_PASSWORD, SOCKS_PASSWORD, 'wrong-Secret-51ac'];
/** A key of the key file that may use the proxy "tp" only, and leaves through "sx" by default. */
const LIMITED_KEY = 'limited-key-0123456789abcdef';

interface Seen {
  remoteAddress: string | undefined;
  headers: Record<string, string | string[] | undefined>;
}
const seen: Seen[] = [];
const fixtures = new FixtureServer({
  '/': html('<title>through</title><p>hello</p>'),
});
fixtures.route('/echo', (req, res) => {
  seen.push({ remoteAddress: req.socket.remoteAddress, headers: req.headers });
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(`<title>echo</title><pre id="peer">${req.socket.remoteAddress ?? ''}</pre>`);
});

/** An allow-listed local service: reached directly whatever proxy the request names. */
const localSeen: (string | undefined)[] = [];
const local = new FixtureServer();
local.route('/echo', (req, res) => {
  localSeen.push(req.socket.remoteAddress);
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end('<title>local</title>');
});

/** Counts every connection; no test may make one (a target the policy refuses). */
let canary: Server;
let canaryPort = 0;
let canaryHits = 0;

const tinyproxy = new TinyProxy('alice', HTTP_PASSWORD);
const socks = new Socks5Proxy('bob', SOCKS_PASSWORD);
let stoppedPort = 0;
/** Allow-listed, but nothing listens there: the proxies fail to reach it. */
let closedTargetPort = 0;
let dir = '';
let svc: TestService;
const logs = capturingLogger();

before(async () => {
  await fixtures.start();
  await local.start();
  fixtures.route('/to-canary', (_req, res) => {
    res.writeHead(302, { location: `http://127.0.0.1:${canaryPort}/hit` });
    res.end();
  });
  fixtures.route('/to-rebound-name', (_req, res) => {
    res.writeHead(302, { location: `http://shop.test:${canaryPort}/hit` });
    res.end();
  });
  canary = createServer((s) => {
    canaryHits++;
    s.destroy();
  });
  await new Promise<void>((r) => canary.listen(0, '127.0.0.1', r));
  canaryPort = (canary.address() as { port: number }).port;
  await tinyproxy.start();
  await socks.start();
  stoppedPort = await freePort();
  closedTargetPort = await freePort();
  dir = mkdtempSync(join(tmpdir(), 'pagescript-proxies-'));
  const keyFile = join(dir, 'keys.json');
  writeFileSync(
    keyFile,
    JSON.stringify({
      version: 1,
      keys: [{ name: 'limited', sha256: hashKey(LIMITED_KEY), active: true, proxy: 'sx', proxies: ['tp'] }],
    }),
  );
  const tp = `127.0.0.1:${tinyproxy.port}`;
  const sx = `127.0.0.1:${socks.port}`;
  svc = await startTestService(
    {
      EGRESS_ALLOWLIST: `${local.allowEntry},localhost:${local.port}`,
      API_KEYS_FILE: keyFile,
      PROXIES: [
        `tp=http://alice:${HTTP_PASSWORD}@${tp}`,
        `tp-bad=http://alice:${PASSWORDS[2]}@${tp}`,
        `tp-resolve=http://alice:${HTTP_PASSWORD}@${tp};resolve`,
        `sx=socks5://bob:${SOCKS_PASSWORD}@${sx}`,
        `sx-bad=socks5://bob:${PASSWORDS[2]}@${sx}`,
        `sx-resolve=socks5://bob:${SOCKS_PASSWORD}@${sx};resolve`,
        `stopped=http://alice:${HTTP_PASSWORD}@127.0.0.1:${stoppedPort}`,
      ].join(','),
      LOG_LEVEL: 'info',
    },
    {
      egressSeam: {
        hosts: { 'shop.test': [['127.0.0.1']] },
        loopbackOnly: true,
        publicTargets: [
          { address: '127.0.0.1', port: fixtures.port },
          { address: '127.0.0.1', port: closedTargetPort },
        ],
      },
    },
    logs.logger,
  );
});
after(async () => {
  await svc?.close();
  await tinyproxy.close();
  await socks.close();
  await fixtures.close();
  await local.close();
  await new Promise<void>((r) => canary.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

/** Neither a password nor any part of it reached `text`. */
function assertNoPassword(text: string, where: string): void {
  for (const p of PASSWORDS) assert.ok(!text.includes(p), `${where} holds a proxy password`);
  assert.ok(
    !text.includes(Buffer.from(`alice:${HTTP_PASSWORD}`).toString('base64')),
    `${where} holds the Basic credentials`,
  );
}

async function through(
  proxy: string,
  path = '/echo',
  key = TEST_KEY,
): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  return await svc.post(
    { url: fixtures.url(path), script: 'return await page.title()', options: { proxy } },
    { 'x-gateway-key': key },
  );
}

describe('where the credentials are', () => {
  test('no proxy password reaches a slot process: not its environment, its command line nor its memory; the egress process holds them', async (t) => {
    // Requests through both kinds of proxy first: the slot process named each by name.
    assert.equal((await through('tp')).status, 200);
    assert.equal((await through('sx')).status, 200);
    const slots = svc.service.slots.pids;
    const egress = svc.service.egress.pid;
    assert.ok(slots.length >= 1 && egress !== undefined);
    // A process may end between the listing and the reading (a renderer): it is gone, nothing to read.
    const proc = (pid: number, what: string): string => {
      try {
        return readFileSync(`/proc/${pid}/${what}`, 'latin1');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ESRCH') return '';
        throw e;
      }
    };
    for (const pid of slots) {
      assert.notEqual(proc(pid, 'cmdline'), '', 'the slot process is there to be read');
      for (const what of ['environ', 'cmdline']) assertNoPassword(proc(pid, what), `the slot process's ${what}`);
      for (const child of descendants(pid))
        for (const what of ['environ', 'cmdline']) assertNoPassword(proc(child, what), `Chromium's ${what}`);
    }
    if ((await memoryHolds(egress, HTTP_PASSWORD)) === undefined) {
      t.skip('the memory of another process cannot be read here (needs root)');
      return;
    }
    // The search can find a password: the process that holds the guard has both.
    assert.equal(await memoryHolds(egress, HTTP_PASSWORD), true, 'the egress process holds the HTTP proxy password');
    assert.equal(await memoryHolds(egress, SOCKS_PASSWORD), true, 'the egress process holds the SOCKS password');
    // A slot process may be closed between the listing and the scan (idle, recycled): it holds nothing then.
    let scanned = 0;
    for (const pid of slots)
      for (const p of [HTTP_PASSWORD, SOCKS_PASSWORD]) {
        const holds = await memoryHolds(pid, p);
        assert.notEqual(holds, true, `slot process ${pid} holds a proxy password`);
        if (holds === false) scanned++;
      }
    assert.ok(scanned > 0, 'at least one slot process was scanned whole');
  });
});

describe('through a real proxy', () => {
  test('a request through an HTTP proxy (tinyproxy, CONNECT with Proxy-Authorization) reaches the target from the proxy, without its credentials', async () => {
    seen.length = 0;
    const r = await through('tp');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data, 'echo');
    assert.equal(seen.length, 1);
    assert.equal(seen[0]?.remoteAddress, PROXY_OUTGOING_ADDRESS, 'the target was reached by the proxy');
    assert.equal(seen[0]?.headers['proxy-authorization'], undefined);
    assertNoPassword(JSON.stringify(seen[0]?.headers), "the target's request headers");
    // SECURITY: the proxy was asked for the address the guard checked, not a name.
    assert.ok(
      tinyproxy.requests().includes(`CONNECT 127.0.0.1:${fixtures.port} HTTP/1.1`),
      tinyproxy.requests().join('\n'),
    );
  });

  test('a request through a SOCKS5 proxy (microsocks, RFC 1929 user/password) reaches the target from the proxy', async () => {
    seen.length = 0;
    const r = await through('sx');
    assert.equal(r.status, 200, r.text);
    assert.equal(seen[0]?.remoteAddress, PROXY_OUTGOING_ADDRESS);
  });

  test('without options.proxy (and no default for the key) the request leaves from this machine, as before', async () => {
    seen.length = 0;
    const r = await svc.post({ url: fixtures.url('/echo'), script: 'return await page.title()' });
    assert.equal(r.status, 200, r.text);
    assert.equal(seen[0]?.remoteAddress, '127.0.0.1');
  });

  test("a key's default proxy carries its requests when they name none", async () => {
    seen.length = 0;
    const r = await svc.post(
      { url: fixtures.url('/echo'), script: 'return await page.title()' },
      { 'x-gateway-key': LIMITED_KEY },
    );
    assert.equal(r.status, 200, r.text);
    assert.equal(seen[0]?.remoteAddress, PROXY_OUTGOING_ADDRESS);
  });

  test('a may-resolve proxy is given the host name the guard checked; the others the address', async () => {
    const named = `CONNECT localhost:${fixtures.port} HTTP/1.1`;
    const before = tinyproxy.requests().filter((l) => l === named).length;
    const r = await svc.post({
      url: `http://localhost:${fixtures.port}/echo`,
      script: 'return await page.title()',
      options: { proxy: 'tp-resolve' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(tinyproxy.requests().filter((l) => l === named).length, before + 1, tinyproxy.requests().join('\n'));
    // The same name through a proxy that may not resolve: the proxy is asked for the address.
    const byAddress = `CONNECT 127.0.0.1:${fixtures.port} HTTP/1.1`;
    const asked = tinyproxy.requests().length;
    const a = await svc.post({
      url: `http://localhost:${fixtures.port}/echo`,
      script: 'return await page.title()',
      options: { proxy: 'tp' },
    });
    assert.equal(a.status, 200, a.text);
    const lines = tinyproxy.requests().slice(asked);
    assert.ok(lines.length > 0 && lines.every((l) => l === byAddress), lines.join('\n'));
    const s = await svc.post({
      url: `http://localhost:${fixtures.port}/echo`,
      script: 'return await page.title()',
      options: { proxy: 'sx-resolve' },
    });
    assert.equal(s.status, 200, s.text);
  });

  test("nothing the script can see holds the proxy's credentials: response and request headers, page.url(), the error of a refused remoteAddress()", async () => {
    const r = await svc.post({
      url: fixtures.url('/echo'),
      script: `
        const seen = [];
        page.on('request', (req) => seen.push(JSON.stringify(req.headers())));
        const response = await page.goto(${JSON.stringify(fixtures.url('/echo'))});
        let remote;
        try { remote = response.remoteAddress(); } catch (e) { remote = e.message; }
        return { remote, headers: response.headers(), request: response.request().headers(), url: page.url(), seen };
      `,
      options: { proxy: 'tp' },
    });
    assert.equal(r.status, 200, r.text);
    assertNoPassword(r.text, 'the reply');
  });
});

describe('an allow-listed local target never goes through an upstream proxy', () => {
  // The allow-list names this machine's network; asked of a proxy, 127.0.0.1 or
  // localhost would be the proxy host's own. Each is dialled directly instead.
  for (const [proxy, host] of [
    ['tp', '127.0.0.1'],
    ['tp-resolve', 'localhost'],
    ['sx', '127.0.0.1'],
    ['sx-resolve', 'localhost'],
  ] as const)
    test(`an allow-listed ${host} asked through proxy "${proxy}" is dialled directly, and the proxy is never asked for it`, async () => {
      localSeen.length = 0;
      const asked = tinyproxy.requests().length;
      const r = await svc.post({
        url: `http://${host}:${local.port}/echo`,
        script: 'return await page.title()',
        options: { proxy },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data, 'local');
      assert.deepEqual(localSeen, ['127.0.0.1'], 'reached from this machine, not from the proxy');
      const lines = tinyproxy.requests().slice(asked);
      assert.ok(
        lines.every((l) => !l.includes(`:${local.port} `)),
        lines.join('\n'),
      );
    });
});

describe('clear failures', () => {
  test('wrong credentials at an HTTP proxy: SCRAPING_FAILED naming the proxy and its 407, never the password', async () => {
    const r = await through('tp-bad');
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'SCRAPING_FAILED');
    assert.match(String(r.body.error), /upstream proxy "tp-bad" refused its credentials \(HTTP 40[17]\)/);
    assertNoPassword(r.text, 'the reply');
  });

  test('wrong credentials at a SOCKS5 proxy: SCRAPING_FAILED naming the proxy, never the password', async () => {
    const r = await through('sx-bad');
    assert.equal(r.status, 400, r.text);
    assert.match(String(r.body.error), /upstream proxy "sx-bad" refused its SOCKS5 user name and password/);
    assertNoPassword(r.text, 'the reply');
  });

  test('a stopped proxy: SCRAPING_FAILED says the proxy is unreachable', async () => {
    const r = await through('stopped');
    assert.equal(r.status, 400, r.text);
    assert.match(String(r.body.error), /net::ERR_PROXY_CONNECTION_FAILED \(upstream proxy "stopped" is unreachable/);
    assertNoPassword(r.text, 'the reply');
  });

  test('a target the SOCKS5 proxy cannot reach: SCRAPING_FAILED names the SOCKS5 reply', async () => {
    const r = await svc.post({
      url: `http://127.0.0.1:${closedTargetPort}/`,
      script: 'return 1',
      options: { proxy: 'sx' },
    });
    assert.equal(r.status, 400, r.text);
    assert.match(String(r.body.error), /upstream proxy "sx" failed \(SOCKS5 reply \d: [a-z ]+\)/);
  });

  test('an HTTP proxy refusing the target: SCRAPING_FAILED names its status', async () => {
    const r = await svc.post({
      url: `http://127.0.0.1:${closedTargetPort}/`,
      script: 'return 1',
      options: { proxy: 'tp' },
    });
    assert.equal(r.status, 400, r.text);
    assert.match(String(r.body.error), /upstream proxy "tp" refused the target \(HTTP 5\d\d\)/);
  });

  /**
   * The page at `path` (fetched through the proxy) redirects to a target the
   * policy refuses: the guard refuses it, the canary sees nothing, and tinyproxy
   * was asked for the page but never for anything that names `never`.
   */
  async function assertRefusedBeforeTheProxy(proxy: string, path: string, never: string): Promise<void> {
    const hits = canaryHits;
    const asked = tinyproxy.requests().length;
    const r = await through(proxy, path);
    assert.equal(r.status, 400, r.text);
    assert.match(String(r.body.error), /address not allowed/);
    assert.equal(canaryHits, hits);
    const lines = tinyproxy.requests().slice(asked);
    assert.ok(
      lines.some((l) => l.includes(`:${fixtures.port} `)) && lines.every((l) => !l.includes(never)),
      lines.join('\n'),
    );
  }

  test('a target the policy refuses is refused by the guard through a proxy: the proxy is never asked', async () => {
    await assertRefusedBeforeTheProxy('tp', '/to-canary', `:${canaryPort}`);
  });

  test('a name that resolves to loopback here is refused for a may-resolve proxy before the proxy is given it', async () => {
    await assertRefusedBeforeTheProxy('tp-resolve', '/to-rebound-name', 'shop.test');
  });

  test('a proxy failure in one request affects no other running beside it', async () => {
    seen.length = 0;
    const [bad, good, direct] = await Promise.all([
      through('stopped'),
      through('tp'),
      svc.post({ url: fixtures.url('/echo'), script: 'return await page.title()' }),
    ]);
    assert.equal(bad.status, 400, bad.text);
    assert.equal(good.status, 200, good.text);
    assert.equal(direct.status, 200, direct.text);
    assert.doesNotMatch(good.text + direct.text, /proxy/);
  });
});

describe('choosing a proxy', () => {
  test('options.proxy that is not in PROXIES: 400 INVALID_OPTIONS naming options.proxy, before any page is opened', async () => {
    const hits = fixtures.hits.get('/echo') ?? 0;
    const r = await through('nowhere');
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'INVALID_OPTIONS');
    assert.match(String(r.body.error), /options\.proxy "nowhere" is not a proxy this key may use/);
    assert.equal(fixtures.hits.get('/echo') ?? 0, hits);
  });

  test('options.proxy the key may not use: the same 400, before any page is opened', async () => {
    const hits = fixtures.hits.get('/echo') ?? 0;
    const r = await through('tp-resolve', '/echo', LIMITED_KEY);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'INVALID_OPTIONS');
    assert.match(String(r.body.error), /options\.proxy "tp-resolve" is not a proxy this key may use/);
    assert.equal(fixtures.hits.get('/echo') ?? 0, hits);
    const allowed = await through('tp', '/echo', LIMITED_KEY);
    assert.equal(allowed.status, 200, allowed.text);
  });

  test('options.proxy as a URL is refused: callers cannot bring a proxy of their own', async () => {
    const r = await through(`http://127.0.0.1:${tinyproxy.port}`);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'INVALID_OPTIONS');
    assert.match(String(r.body.error), /options\.proxy must be the name of a proxy/);
  });
});

describe('what the operator sees', () => {
  test('metrics count each proxy: requests, failures by kind, bytes; no credentials in /metrics, /health or a log line', async () => {
    await through('tp');
    await through('tp-bad');
    await through('stopped');
    const m = await svc.raw('GET', '/metrics');
    const proxyLines = m.text.split('\n').filter((l) => l.startsWith('pagescript_proxy_'));
    for (const counted of [
      /^pagescript_proxy_requests_total\{proxy="tp"\} [1-9]/,
      /^pagescript_proxy_failures_total\{proxy="tp-bad",kind="auth"\} [1-9]/,
      /^pagescript_proxy_failures_total\{proxy="stopped",kind="unreachable"\} [1-9]/,
      /^pagescript_proxy_bytes_total\{proxy="tp",direction="received"\} [1-9]/,
    ])
      assert.ok(
        proxyLines.some((l) => counted.test(l)),
        `${String(counted)} in\n${proxyLines.join('\n')}`,
      );
    assertNoPassword(m.text, '/metrics');
    assertNoPassword((await svc.raw('GET', '/health')).text, '/health');
    const text = logs.text();
    assert.match(text, /upstream proxy failed/);
    assertNoPassword(text, 'the logs');
  });
});
