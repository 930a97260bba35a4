// Malicious activity is monitored and blocked per key (docs/security.md
// "Monitoring and blocking"): a key that probes internal addresses by its url,
// by goto, by the page's fetch, or calls refused methods is blocked after the
// documented number of attempts while another key is served throughout; a key
// that loads real pages whose subresources resolve to internal addresses is
// recorded, never blocked. No connection leaves loopback: names are answered by
// the egress test seam, and a public answer is refused by its connector.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { hashKey, writeKeyFile } from '../../../src/front/tenancy/keyfile.js';
import { FixtureServer, html, REAL_PAGES_DIR, realPageNames } from '../../helpers/fixtures.js';
import { startTestService, type Reply, type TestService } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';
import { TinyProxy } from '../../helpers/proxies.js';

/** The defaults (docs/configuration.md): threshold 200; navigation 10, page target 1, method 5. */
const THRESHOLD = 200;
const NAVIGATION = 10;
const METHOD = 5;
/** The WebSocket prober's own threshold (a policy may lower the service's). */
const SOCKET_THRESHOLD = 10;

const dir = mkdtempSync(join(tmpdir(), 'pagescript-blocking-'));
const keyFile = join(dir, 'keys.json');
const KEYS = {
  honest: 'ps_honest_0123456789abcdefghijklmnopqrst',
  bystander: 'ps_bystander_0123456789abcdefghijklmnopq',
  byUrl: 'ps_byurl_0123456789abcdefghijklmnopqrstu',
  byGoto: 'ps_bygoto_0123456789abcdefghijklmnopqrst',
  byFetch: 'ps_byfetch_0123456789abcdefghijklmnopqrs',
  byMethod: 'ps_bymethod_0123456789abcdefghijklmnopqr',
  byRedirect: 'ps_byredirect_0123456789abcdefghijklmnop',
  byFrame: 'ps_byframe_0123456789abcdefghijklmnopqrs',
  bySocket: 'ps_bysocket_0123456789abcdefghijklmnopqr',
  byProxy: 'ps_byproxy_0123456789abcdefghijklmnopqrs',
} as const;
/** The upstream proxy the byProxy key's requests leave through (a real tinyproxy on loopback). */
const tinyproxy = new TinyProxy('alice', 'tp-Secret-blocking-1');

/** Subresource hosts of the saved real pages; every third is answered 10.x, the rest a public address. */
function subresourceHosts(): Record<string, string[][]> {
  const hosts = new Set<string>();
  for (const name of realPageNames()) {
    const text = readFileSync(join(REAL_PAGES_DIR, name), 'utf8');
    for (const m of text.matchAll(/(?:src|href)=["']?(?:https?:)?\/\/([a-z0-9.-]+\.[a-z]{2,})/gi))
      hosts.add((m[1] as string).toLowerCase());
  }
  const out: Record<string, string[][]> = {};
  [...hosts].sort().forEach((h, i) => {
    out[h] = [[i % 3 === 0 ? `10.20.${Math.floor(i / 250) % 250}.${(i % 250) + 1}` : '93.184.216.34']];
  });
  return out;
}

const fixtures = new FixtureServer({
  '/ok': html('<title>ok</title>'),
  // A redirect to a private address chosen by the query: each n a distinct target.
  '/to': (req, res) => {
    const n = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('n'));
    res.writeHead(302, { location: `http://10.0.${Math.floor(n / 250) + 10}.${(n % 250) + 1}/` }).end();
  },
});
let svc: TestService;
const hosts = subresourceHosts();

before(async () => {
  // The saved pages as they were, without the fixture's `default-src 'none'`: their subresources reach the guard.
  for (const name of realPageNames())
    fixtures.route(`/open/${name}`, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(readFileSync(join(REAL_PAGES_DIR, name)));
    });
  await fixtures.start();
  await tinyproxy.start();
  writeKeyFile(keyFile, {
    version: 1,
    keys: Object.entries(KEYS).map(([name, key]) => ({
      name,
      sha256: hashKey(key),
      active: true,
      // Chromium holds a page's WebSockets back while others connect: this key's policy lowers its threshold.
      ...(name === 'bySocket' ? { policy: { securityThreshold: SOCKET_THRESHOLD } } : {}),
      ...(name === 'byProxy' ? { proxy: 'tp', proxies: ['tp'], policy: { securityThreshold: SOCKET_THRESHOLD } } : {}),
    })),
  });
  svc = await startTestService(
    {
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      API_KEYS_FILE: keyFile,
      // The defaults (the helper turns blocking off for the other suites).
      SECURITY_BLOCKING: 'on',
      PROXIES: `tp=http://alice:${tinyproxy.password}@127.0.0.1:${tinyproxy.port}`,
      SCRIPT_TIMEOUT_MS: '20000',
      NAVIGATION_TIMEOUT_MS: '15000',
    },
    { egressSeam: { hosts, loopbackOnly: true } },
  );
});
after(async () => {
  await svc?.close();
  await fixtures.close();
  await tinyproxy.stop();
  rmSync(dir, { recursive: true, force: true });
});

const as = (key: string) => ({ 'x-gateway-key': key });
const post = (key: string, body: Record<string, unknown>): Promise<Reply> => svc.post(body, as(key));
const ok = () => fixtures.url('/ok');

async function assertBystanderServed(): Promise<void> {
  const r = await post(KEYS.bystander, { url: ok(), script: 'return await page.title()' });
  assert.equal(r.status, 200, r.text.slice(0, 300));
}

function assertBlocked(r: Reply): void {
  assert.equal(r.status, 403, r.text.slice(0, 300));
  assert.equal(r.body.code, 'KEY_BLOCKED');
  assert.match(String(r.body.error), /^Key blocked until \d{4}-\d\d-\d\dT[\d:.]+Z$/);
  assert.ok(Number(r.headers['retry-after']) > 0);
}

test('a key whose url probes the metadata address is blocked after threshold / navigation weight requests; another key is served', async () => {
  const attempts = THRESHOLD / NAVIGATION;
  for (let i = 1; i <= attempts; i++) {
    const r = await post(KEYS.byUrl, {
      url: `http://169.254.169.254:${8000 + i}/latest/meta-data/`,
      script: 'return 1',
    });
    assert.equal(r.status, 400, `attempt ${i}: ${r.text.slice(0, 300)}`);
    if (i % 5 === 0) await assertBystanderServed();
  }
  assertBlocked(await post(KEYS.byUrl, { url: ok(), script: 'return 1' }));
  await assertBystanderServed();
});

test('npm run key -- events lists the blocked key and its evidence; unblock ends the block', async () => {
  const key = (...args: string[]) =>
    promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/key.ts', ...args, '--file', keyFile], {
      env: { ...process.env, REDIS_URL: '' },
    });
  const { stdout } = await key('events', '--name', 'byUrl');
  const events = JSON.parse(stdout) as { blockedUntil?: string; blocks: number; requests: { requestId: string }[] };
  assert.match(String(events.blockedUntil), /^\d{4}-/);
  assert.equal(events.blocks, 1);
  assert.equal(events.requests.length, THRESHOLD / NAVIGATION);
  assertBlocked(await post(KEYS.byUrl, { url: ok(), script: 'return 1' }));
  assert.match((await key('unblock', '--name', 'byUrl')).stdout, /byUrl: block ended/);
  // The service reads the state file again when it changes (within a second): wait for it.
  await until(
    async () => (await post(KEYS.byUrl, { url: ok(), script: 'return 1' })).status === 200,
    'the unblocked key to be served',
    { timeoutMs: 10_000, everyMs: 200 },
  );
});

test('a key whose script walks private addresses with goto is blocked after threshold / navigation weight gotos', async () => {
  const gotos = THRESHOLD / NAVIGATION;
  const r = await post(KEYS.byGoto, {
    url: ok(),
    script: `let refused = 0;
      for (let i = 1; i <= ${gotos}; i++) {
        try { await page.goto('http://10.0.0.' + i + '/admin'); } catch (e) { refused++; }
      }
      return refused;`,
  });
  assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.equal(r.body.data, gotos);
  assertBlocked(await post(KEYS.byGoto, { url: ok(), script: 'return 1' }));
  await assertBystanderServed();
});

test('a key whose page fetches distinct internal targets is blocked by their count; another key is served', async () => {
  // Ports above Chromium's own refused ones (ERR_UNSAFE_PORT never reaches the guard).
  const r = await post(KEYS.byFetch, {
    url: ok(),
    script: `return await page.evaluate(async () => {
        const tries = [];
        for (let port = 1; port <= ${THRESHOLD}; port++)
          tries.push(fetch('http://10.0.0.1:' + (20000 + port) + '/').then(() => 'ok', () => 'refused'));
        return (await Promise.all(tries)).filter((x) => x === 'refused').length;
      })`,
  });
  assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.equal(r.body.data, THRESHOLD);
  // The guard's refusals reach the front from the egress process: wait for the block, not for a time.
  await until(
    async () => (await post(KEYS.byFetch, { url: ok(), script: 'return 1' })).status === 403,
    'the block of the key whose page fetched internal targets',
    { timeoutMs: 20_000, everyMs: 200 },
  );
  assertBlocked(await post(KEYS.byFetch, { url: ok(), script: 'return 1' }));
  await assertBystanderServed();
});

test('a key whose scripts call refused methods and options is blocked after the documented number of requests', async () => {
  const script = `let refused = 0;
    for (const call of [() => page.browser(), () => page.target(), () => page.createCDPSession(),
                        () => page.waitForFileChooser(), () => page.tracing,
                        () => page.screenshot({ path: '/tmp/pagescript-probe.png' })]) {
      try { await call(); } catch (e) { if (/is not available in pagescript/.test(String(e.message))) refused++; }
    }
    return refused;`;
  const first = await post(KEYS.byMethod, { url: ok(), script });
  assert.equal(first.status, 200, first.text.slice(0, 300));
  const perRequest = first.body.data as number;
  assert.equal(perRequest, 6, 'each refused call threw');
  const requests = Math.ceil(THRESHOLD / (METHOD * perRequest));
  for (let i = 2; i <= requests; i++) {
    const r = await post(KEYS.byMethod, { url: ok(), script });
    assert.equal(r.status, 200, `request ${i}: ${r.text.slice(0, 300)}`);
  }
  assertBlocked(await post(KEYS.byMethod, { url: ok(), script: 'return 1' }));
  await assertBystanderServed();
});

/** One request of `key` whose page makes THRESHOLD distinct refused targets with `make` (n → a JS expression); then the block. */
async function assertBlockedByPageTargets(key: string, make: string, count = THRESHOLD): Promise<void> {
  const r = await post(key, {
    url: ok(),
    script: `await page.evaluate(async (count) => {
        const make = ${make};
        await Promise.all(Array.from({ length: count }, (_, n) => make(n)));
      }, ${count});
      return 'done'`,
  });
  assert.equal(r.status, 200, r.text.slice(0, 300));
  // The guard's refusals reach the front from the egress process: wait for the block, not for a time.
  await until(
    async () => (await post(key, { url: ok(), script: 'return 1' })).status === 403,
    'the block of the key whose page made internal targets',
    { timeoutMs: 20_000, everyMs: 200 },
  );
  await assertBystanderServed();
}

test('a key whose page follows redirects to private addresses is blocked by their count', async () => {
  await assertBlockedByPageTargets(KEYS.byRedirect, `(n) => fetch('/to?n=' + n).catch(() => null)`);
});

test('a key whose page frames private addresses is blocked by their count', async () => {
  await assertBlockedByPageTargets(
    KEYS.byFrame,
    `(n) => new Promise((done) => {
        const f = document.createElement('iframe');
        f.onload = f.onerror = () => done(null);
        setTimeout(() => done(null), 3000);
        f.src = 'http://10.1.' + (Math.floor(n / 250) + 10) + '.' + ((n % 250) + 1) + '/';
        document.body.appendChild(f);
      })`,
  );
});

test('a key whose page opens WebSockets to private addresses is blocked by their count', async () => {
  await assertBlockedByPageTargets(
    KEYS.bySocket,
    `(n) => new Promise((done) => {
        const ws = new WebSocket('ws://10.2.' + (Math.floor(n / 250) + 10) + '.' + ((n % 250) + 1) + '/');
        ws.onerror = ws.onclose = () => done(null);
        setTimeout(() => done(null), 10000);
      })`,
    SOCKET_THRESHOLD,
  );
});

test('a key whose requests leave through an upstream proxy is blocked for probing too; the proxy is never asked', async () => {
  await assertBlockedByPageTargets(
    KEYS.byProxy,
    `(n) => fetch('http://10.3.0.' + (n + 1) + ':8080/').catch(() => null)`,
    SOCKET_THRESHOLD,
  );
  assert.deepEqual(
    tinyproxy.requests().filter((r) => r.includes('10.3.0.')),
    [],
  );
});

test('an honest key loading real pages many times, some subresources internal, is recorded and never blocked', async (t) => {
  assert.ok(Object.keys(hosts).length > 10, 'the real pages name subresource hosts');
  for (let round = 0; round < 3; round++)
    for (const name of realPageNames()) {
      const r = await post(KEYS.honest, { url: fixtures.url(`/open/${name}`), script: 'return await page.title()' });
      assert.equal(r.status, 200, `${name}, round ${round}: ${r.text.slice(0, 300)}`);
    }
  const metrics = (await svc.raw('GET', '/metrics')).text;
  assert.match(metrics, /pagescript_security_events_total\{key="honest",class="private"\} [1-9]/);
  assert.doesNotMatch(metrics, /pagescript_key_blocks_total\{key="honest"\}/);
  // How far below the threshold an honest key stays (the margin docs/security.md "Tuning" speaks of).
  const honest = await svc.service.app.security.store.events('honest', svc.service.config.security);
  t.diagnostic(
    `honest key: score ${honest.score} in the window (threshold ${THRESHOLD}), ${honest.requests.length} requests scored`,
  );
  assert.match(metrics, /pagescript_key_blocks_total\{key="byUrl"\} 1/);
  assert.match(metrics, /pagescript_security_events_total\{key="byMethod",class="refused-method"\} [1-9]/);
});
