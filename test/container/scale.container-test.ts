// Two instances, one Redis, HAProxy: compose.yaml's services run for real with
// podman (`npm run test:scale`; .ci/run runs it after the image test; not part
// of npm test). Each service becomes a plain `podman run` made from compose.yaml
// (test/container/compose.ts), with the test's own ports, keys and limits; every
// container is on the host network on its own 127.0.0.1 port. Checked under
// load through the balancer: one rate limit, one --concurrency, one wrong-key
// lockout and one security block across both instances; a rolling restart that loses nothing; Redis
// away at start and mid-run (the fallback, then recovery); an instance killed.
import assert from 'node:assert/strict';

import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { hashKey } from '../../src/front/tenancy/keyfile.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../helpers/fixtures.js';
import { until } from '../helpers/wait.js';
import { readCompose, runArgs, type ComposeService } from './compose.js';
import { Podman, ensureTools, freePort, keysDirectory } from './podman.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const IMAGES: Record<string, { tag: string; context: string; file?: string }> = {
  'pagescript-1': { tag: 'localhost/pagescript:container-test', context: ROOT },
  'pagescript-2': { tag: 'localhost/pagescript:container-test', context: ROOT },
  redis: { tag: 'localhost/pagescript-redis:container-test', context: join(ROOT, 'deploy'), file: 'redis.Dockerfile' },
  balancer: {
    tag: 'localhost/pagescript-haproxy:container-test',
    context: join(ROOT, 'deploy'),
    file: 'haproxy.Dockerfile',
  },
};
const PREFIX = `pagescript-scale-test-${process.pid}`;
const KEY = 'scale-test-plain-key-0123456789';
const RATED = 'scale-test-rated-key-0123456789';
const CAPPED = 'scale-test-capped-key-012345678';
const PROBER = 'scale-test-prober-key-012345678';
/** The defaults (docs/configuration.md): a key is blocked at SECURITY_THRESHOLD points; a refused url weighs 10. */
const SECURITY_THRESHOLD = 200;
const NAVIGATION_WEIGHT = 10;
/** The rated key's limit: a burst of 3 × this over both instances must get exactly this through. */
const RATED_LIMIT = 4;
/** Wrong keys from one address before the next is refused with 429 (AUTH_FAILURE_LIMIT). */
const AUTH_FAILURES = 3;
const METRICS_TOKEN = 'scale-test-metrics-token-0123';
const START_TIMEOUT_MS = 180_000;
const PODMAN_TIMEOUT_MS = 200_000;
const SLOW = 'await new Promise((r) => setTimeout(r, 1500)); return await page.title()';

const skip = await ensureTools();
if (skip !== undefined) process.stderr.write(`[scale test] SKIPPED: ${skip}\n`);

interface Reply {
  status: number;
  body: Record<string, unknown>;
  text: string;
  headers: Record<string, unknown>;
}

async function call(
  port: number,
  path: string,
  opts: { key?: string; body?: unknown; token?: string } = {},
): Promise<Reply> {
  const r = await request(`http://127.0.0.1:${port}${path}`, {
    method: opts.body === undefined ? 'GET' : 'POST',
    headers: {
      'content-type': 'application/json',
      ...(opts.key === undefined ? {} : { 'x-gateway-key': opts.key }),
      ...(opts.token === undefined ? {} : { authorization: `Bearer ${opts.token}` }),
    },
    ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
    headersTimeout: 120_000,
    bodyTimeout: 120_000,
    // A connection per request, as curl makes: a kept-alive one can be closed by HAProxy or an instance just
    // as the next request goes out on it ("other side closed" in 0.2 s, seen once), a race of reuse, not of
    // what these tests measure.
    reset: true,
  });
  const text = await r.body.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON (HAProxy's own error pages are HTML)
  }
  return { status: r.statusCode, body, text, headers: r.headers };
}

describe('two instances, one Redis, HAProxy (compose.yaml)', { skip }, () => {
  let podman: Podman;
  const ports: Record<string, number> = {};
  const started = new Set<string>();
  const fixtures = new FixtureServer({ '/page': html(EXAMPLE_DOMAIN_HTML) });
  let services: Record<string, ComposeService> = {};
  const t0 = Date.now();

  const name = (service: string): string => `${PREFIX}-${service}`;
  const balancer = (path: string, opts: Parameters<typeof call>[2] = {}): Promise<Reply> =>
    call(ports.balancer ?? 0, path, opts);
  const instance = (i: 1 | 2, path: string, opts: Parameters<typeof call>[2] = {}): Promise<Reply> =>
    call(ports[`pagescript-${i}`] ?? 0, path, opts);
  const logs = async (service: string): Promise<string> => {
    const r = await podman.podman(['logs', name(service)], { timeoutMs: PODMAN_TIMEOUT_MS });
    return `${r.stdout}${r.stderr}`;
  };
  /** The count of one sample of an instance's /metrics. */
  const sample = async (i: 1 | 2, metric: string): Promise<number> => {
    const text = (await instance(i, '/metrics', { token: METRICS_TOKEN })).text;
    const line = text.split('\n').find((l) => l.startsWith(`${metric} `));
    return line === undefined ? 0 : Number(line.split(' ').pop());
  };
  const okCount = (i: 1 | 2): Promise<number> => sample(i, 'pagescript_requests_total{code="OK"}');

  async function start(service: string, extra: string[] = []): Promise<void> {
    const def = services[service];
    assert.ok(def, `compose.yaml has no ${service}`);
    const vars: Record<string, string> = {
      API_KEYS: KEY,
      METRICS_TOKEN,
      REDIS_PORT: String(ports.redis),
      BALANCER_PORT: String(ports.balancer),
      PAGESCRIPT_1_PORT: String(ports['pagescript-1']),
      PAGESCRIPT_2_PORT: String(ports['pagescript-2']),
    };
    const { options, command } = runArgs(def, vars, ROOT);
    await podman.mustPodman(
      [
        'run',
        '--detach',
        '--pull=never',
        `--name=${name(service)}`,
        `--cgroup-parent=${podman.cgroup.path}`,
        ...options,
        ...extra,
        IMAGES[service]?.tag ?? '',
        ...command,
      ],
      { timeoutMs: PODMAN_TIMEOUT_MS },
    );
    started.add(service);
  }

  /** The test's own settings for an instance, beyond compose.yaml's: its page server, keys and limits. */
  function instanceExtras(keysDir: string): string[] {
    return [
      `--env=EGRESS_ALLOWLIST=${fixtures.allowEntry}`,
      '--env=RATE_LIMIT=100000',
      `--env=AUTH_FAILURE_LIMIT=${AUTH_FAILURES}`,
      `--volume=${keysDir}:/etc/pagescript:ro`,
      '--env=API_KEYS_FILE=/etc/pagescript/pagescript-keys.json',
    ];
  }

  let keysDir = '';

  before(async () => {
    podman = new Podman();
    await podman.ensureBaseImage();
    services = await readCompose(join(ROOT, 'compose.yaml'));
    assert.deepEqual(Object.keys(services).sort(), Object.keys(IMAGES).sort());
    const built = new Set<string>();
    for (const { tag, context, file } of Object.values(IMAGES)) {
      if (built.has(tag)) continue;
      const s = await podman.build(tag, { context, ...(file ? { file: join(context, file) } : {}) });
      process.stderr.write(`[scale test] ${tag} built in ${s} s\n`);
      built.add(tag);
    }
    await fixtures.start();
    for (const s of Object.keys(IMAGES)) ports[s] = await freePort();
    keysDir = keysDirectory(podman.dir, [
      { name: 'rated', sha256: hashKey(RATED), active: true, rateLimit: RATED_LIMIT, rateLimitWindowMs: 60_000 },
      { name: 'capped', sha256: hashKey(CAPPED), active: true, maxConcurrency: 1 },
      { name: 'prober', sha256: hashKey(PROBER), active: true },
    ]);
    // The instances first, Redis after: a REDIS_URL that cannot be reached at start is the fallback, not a crash.
    await start('pagescript-1', instanceExtras(keysDir));
    await start('pagescript-2', instanceExtras(keysDir));
    await start('balancer');
    for (const i of [1, 2] as const)
      await until(async () => (await instance(i, '/ready').catch(() => undefined))?.status === 200, `instance ${i}`, {
        timeoutMs: START_TIMEOUT_MS,
        everyMs: 500,
      });
  });

  after(async () => {
    try {
      for (const s of started)
        await podman.podman(['rm', '--force', '--time=0', name(s)], { timeoutMs: PODMAN_TIMEOUT_MS });
      await fixtures.close();
    } finally {
      const left = await podman.close();
      process.stderr.write(`[scale test] whole run ${Math.round((Date.now() - t0) / 1000)} s\n`);
      assert.deepEqual(left, [], `cgroups this test made and could not remove: ${left.join(', ')}`);
    }
  });

  test('Redis away at start: both instances serve on local limits and say so; once it starts, both share limits again', async () => {
    for (const i of [1, 2] as const) {
      const h = await instance(i, '/health');
      assert.equal(h.body.limits, 'local-fallback', h.text);
      assert.equal(h.body.status, 'degraded', h.text);
      assert.match(
        await logs(`pagescript-${i}`),
        /Redis unavailable; rate and concurrency limits are enforced per instance/,
      );
    }
    await start('redis');
    for (const i of [1, 2] as const) {
      await until(async () => (await instance(i, '/health')).body.limits === 'redis', `instance ${i} on Redis`, {
        timeoutMs: 30_000,
        everyMs: 250,
      });
      assert.match(await logs(`pagescript-${i}`), /Redis is back; rate and concurrency limits are shared again/);
    }
    // HAProxy sees both instances ready (its own active check of /ready).
    await until(async () => (await balancer('/health')).status === 200, 'the balancer to route', { timeoutMs: 30_000 });
  });

  test(`a burst of ${3 * RATED_LIMIT} for a key with a limit of ${RATED_LIMIT} over both instances gets exactly ${RATED_LIMIT} through`, async () => {
    // The window starts at the key's first request (a fresh key) and lasts 60 s: the whole burst falls in it.
    // A burst that straddled the window's end could get up to twice the limit through; this one cannot.
    const before1 = await sample(1, 'pagescript_requests_total{code="RATE_LIMIT_EXCEEDED"}');
    const before2 = await sample(2, 'pagescript_requests_total{code="RATE_LIMIT_EXCEEDED"}');
    // Sent to the two instances directly, in turn: through the balancer, a burst right after an instance
    // came back (HAProxy marks it up after two good checks) may all go to the other one (a CI run did).
    const replies = await Promise.all(
      Array.from({ length: 3 * RATED_LIMIT }, (_, n) =>
        instance(n % 2 === 0 ? 1 : 2, '/api/scrape', {
          key: RATED,
          body: { url: fixtures.url('/page'), script: 'return 1' },
        }),
      ),
    );
    const statuses = replies.map((r) => r.status).sort();
    assert.deepEqual(
      statuses,
      [...Array(RATED_LIMIT).fill(200), ...Array(2 * RATED_LIMIT).fill(429)],
      JSON.stringify(statuses),
    );
    for (const r of replies.filter((x) => x.status === 429)) assert.equal(r.body.code, 'RATE_LIMIT_EXCEEDED');
    // Both instances refused some: the limit held across them, not on one.
    assert.ok((await sample(1, 'pagescript_requests_total{code="RATE_LIMIT_EXCEEDED"}')) > before1);
    assert.ok((await sample(2, 'pagescript_requests_total{code="RATE_LIMIT_EXCEEDED"}')) > before2);
  });

  test("a key's --concurrency of 1 holds across both instances: its scripts never overlap", async () => {
    const script = 'const s = Date.now(); await new Promise((r) => setTimeout(r, 800)); return [s, Date.now()];';
    const ok = [await okCount(1), await okCount(2)];
    // Sent to each instance directly, two each at once: only a shared cap keeps them apart.
    const replies = await Promise.all(
      ([1, 2, 1, 2] as const).map((i) =>
        instance(i, '/api/scrape', { key: CAPPED, body: { url: fixtures.url('/page'), script } }),
      ),
    );
    for (const r of replies) assert.equal(r.status, 200, r.text);
    const spans = replies.map((r) => r.body.data as [number, number]).sort((x, y) => x[0] - y[0]);
    for (let i = 1; i < spans.length; i++)
      assert.ok((spans[i]?.[0] ?? 0) >= (spans[i - 1]?.[1] ?? 0), `scripts overlapped: ${JSON.stringify(spans)}`);
    assert.equal((await okCount(1)) - (ok[0] ?? 0), 2);
    assert.equal((await okCount(2)) - (ok[1] ?? 0), 2);
  });

  test('the wrong-key lockout is shared: wrong keys at one instance lock the address out at the other', async () => {
    for (let n = 0; n < AUTH_FAILURES; n++) {
      const r = await instance(1, '/api/scrape', { key: `wrong-key-${n}-0123456789abcdef`, body: {} });
      assert.equal(r.status, 401, r.text);
    }
    const r = await instance(2, '/api/scrape', { key: 'wrong-key-last-0123456789abcdef', body: {} });
    assert.equal(r.status, 429, r.text);
    assert.equal(r.body.code, 'RATE_LIMIT_EXCEEDED');
    // A valid key from the same address is never refused for others' failures.
    const good = await instance(2, '/api/scrape', {
      key: KEY,
      body: { url: fixtures.url('/page'), script: 'return 1' },
    });
    assert.equal(good.status, 200, good.text);
  });

  test('a security block is shared: probes split over both instances block the key at both; another key is served', async () => {
    // Half the probes at each instance: neither alone reaches the threshold, the key's one score in Redis does.
    // The metadata address by its literal: refused by policy, nothing is connected to.
    const attempts = SECURITY_THRESHOLD / NAVIGATION_WEIGHT;
    for (let n = 1; n <= attempts; n++) {
      const r = await instance(n % 2 === 0 ? 2 : 1, '/api/scrape', {
        key: PROBER,
        body: { url: `http://169.254.169.254:${8000 + n}/latest/meta-data/`, script: 'return 1' },
      });
      assert.equal(r.status, 400, `probe ${n}: ${r.text.slice(0, 300)}`);
    }
    for (const i of [1, 2] as const) {
      const r = await instance(i, '/api/scrape', {
        key: PROBER,
        body: { url: fixtures.url('/page'), script: 'return 1' },
      });
      assert.equal(r.status, 403, `instance ${i}: ${r.text}`);
      assert.equal(r.body.code, 'KEY_BLOCKED');
      assert.ok(Number(r.headers['retry-after']) > 0, JSON.stringify(r.headers));
      assert.equal(await sample(i, 'pagescript_key_blocks_total{key="prober"}'), i === 1 ? 0 : 1, `instance ${i}`);
    }
    const good = await balancer('/api/scrape', { key: KEY, body: { url: fixtures.url('/page'), script: 'return 1' } });
    assert.equal(good.status, 200, good.text);
  });

  test('a rolling restart loses nothing: SIGTERM to one instance under load, every caller gets 200', async () => {
    const stop = { now: false };
    const results: Reply[] = [];
    // Three callers in a loop, through the balancer: each instance runs one script and queues the next.
    const caller = async (c: number): Promise<void> => {
      for (let n = 0; !stop.now; n++)
        results.push(
          await balancer('/api/scrape', { key: KEY, body: { url: fixtures.url(`/rolling/${c}/${n}`), script: SLOW } }),
        );
    };
    const callers = [0, 1, 2].map((c) => caller(c));
    await until(async () => (await sample(1, 'pagescript_jobs_running')) === 1, 'instance 1 to run a script', {
      timeoutMs: 60_000,
    });
    const stopped = podman.mustPodman(['stop', `--time=150`, name('pagescript-1')], { timeoutMs: PODMAN_TIMEOUT_MS });
    await stopped;
    assert.equal(
      (
        await podman.mustPodman(['inspect', '--format', '{{.State.ExitCode}}', name('pagescript-1')], {
          timeoutMs: PODMAN_TIMEOUT_MS,
        })
      ).trim(),
      '0',
    );
    const log = await logs('pagescript-1');
    const drainAt = log.indexOf('not ready, no new requests');
    assert.ok(drainAt > 0, log.slice(-2000));
    // What it ran and had queued at the signal was finished, not refused.
    assert.ok(log.slice(drainAt).includes('"msg":"scrape done"'), log.slice(drainAt, drainAt + 3000));
    assert.doesNotMatch(log.slice(drainAt), /shutting down: grace period over/);
    // Meanwhile the other instance serves; then the stopped one comes back.
    await podman.mustPodman(['start', name('pagescript-1')], { timeoutMs: PODMAN_TIMEOUT_MS });
    await until(async () => (await instance(1, '/ready').catch(() => undefined))?.status === 200, 'instance 1 back', {
      timeoutMs: START_TIMEOUT_MS,
      everyMs: 500,
    });
    stop.now = true;
    await Promise.all(callers);
    const failed = results.filter((r) => r.status !== 200);
    assert.deepEqual(
      failed.map((r) => `${r.status} ${r.text.slice(0, 200)}`),
      [],
    );
    assert.ok(results.length >= 6, `${results.length} requests`);
  });

  test('Redis stopped mid-run: served on local limits (the log and /health say so); back on Redis once it starts', async () => {
    await podman.mustPodman(['stop', '--time=5', name('redis')], { timeoutMs: PODMAN_TIMEOUT_MS });
    for (const i of [1, 2] as const)
      await until(
        async () => (await instance(i, '/health')).body.limits === 'local-fallback',
        `instance ${i} falls back`,
        {
          timeoutMs: 30_000,
          everyMs: 250,
        },
      );
    const during = await balancer('/api/scrape', {
      key: KEY,
      body: { url: fixtures.url('/page'), script: 'return 1' },
    });
    assert.equal(during.status, 200, during.text);
    await podman.mustPodman(['start', name('redis')], { timeoutMs: PODMAN_TIMEOUT_MS });
    for (const i of [1, 2] as const)
      await until(async () => (await instance(i, '/health')).body.limits === 'redis', `instance ${i} back on Redis`, {
        timeoutMs: 30_000,
        everyMs: 250,
      });
    for (const i of [1, 2] as const) {
      const log = await logs(`pagescript-${i}`);
      const lost = log.lastIndexOf('Redis unavailable');
      assert.ok(lost > 0 && log.indexOf('Redis is back', lost) > lost, `instance ${i}: ${log.slice(-1500)}`);
    }
  });

  test('SIGKILL under load: only the request the killed instance ran fails (a clear 5xx), none is sent twice, the rest go on', async () => {
    await until(async () => (await balancer('/health')).status === 200, 'the balancer to route', { timeoutMs: 30_000 });
    const long = 'await new Promise((r) => setTimeout(r, 4000)); return await page.title()';
    // One long script on each instance (least connections spreads the two).
    const paths = ['/killed/a', '/killed/b'];
    const inFlight = paths.map((p) =>
      balancer('/api/scrape', { key: KEY, body: { url: fixtures.url(p), script: long } }),
    );
    await until(
      async () =>
        (await sample(1, 'pagescript_jobs_running')) === 1 && (await sample(2, 'pagescript_jobs_running')) === 1,
      'a script on each instance',
      { timeoutMs: 60_000 },
    );
    await podman.mustPodman(['kill', '--signal=KILL', name('pagescript-2')], { timeoutMs: PODMAN_TIMEOUT_MS });
    const replies = await Promise.all(inFlight);
    const statuses = replies.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 502], replies.map((r) => `${r.status} ${r.text.slice(0, 200)}`).join('\n'));
    // Each page was loaded once: the balancer did not send the killed instance's POST to the other.
    for (const p of paths) assert.equal(fixtures.hits.get(p), 1, p);
    // New requests go to the instance left, with no error (refused connections are retried elsewhere).
    for (let n = 0; n < 3; n++) {
      const r = await balancer('/api/scrape', { key: KEY, body: { url: fixtures.url('/page'), script: 'return 1' } });
      assert.equal(r.status, 200, r.text);
    }
  });
});
