// Graceful shutdown of the real process (src/front/server.ts): SIGTERM turns
// /health not-ready and closes the listener at once, lets running and queued
// requests finish within SHUTDOWN_GRACE_MS, ends the rest with 503, closes
// Chromium, exits 0, and leaves no process behind: a rolling restart's half.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { TEST_KEY } from '../../helpers/service.js';
import { alive, descendants } from '../../helpers/system.js';
import { request } from 'undici';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
before(() => fixtures.start());
after(() => fixtures.close());

/** With the metrics token, /health says how many scripts run and wait. */
const HEALTH_TOKEN = 'health-token-0123456789';

interface Running {
  child: ChildProcess;
  base: string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The JSON log lines written to stdout so far (LOG_LEVEL decides which). */
  lines(): Array<Record<string, unknown>>;
}

async function startProcess(env: Record<string, string>, opts: { detached?: boolean } = {}): Promise<Running> {
  const child = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', 'src/front/server.ts'], {
    env: {
      ...process.env,
      PORT: '0',
      API_KEYS: TEST_KEY,
      LOG_LEVEL: 'silent',
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      MAX_CONCURRENCY: '1',
      METRICS_TOKEN: HEALTH_TOKEN,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A process group of its own, as a service manager starts it: a signal to the group reaches every process.
    detached: opts.detached ?? false,
  });
  let all = '';
  child.stdout?.on('data', (d: Buffer) => (all += d.toString()));
  // Kept for the failure message (a start that fails says why on stderr), and passed on.
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
    process.stderr.write(d);
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    exit.then(
      ({ code, signal }) =>
        reject(new Error(`the service exited (${code ?? signal}) before listening: ${out}\nstderr: ${err}`)),
      reject,
    );
  });
  const lines = (): Array<Record<string, unknown>> =>
    all
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { child, base, exit, lines };
}

async function post(base: string, script: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await request(`${base}/api/scrape`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-key': TEST_KEY },
    body: JSON.stringify({ url: fixtures.url('/example'), script }),
  });
  return { status: r.statusCode, body: (await r.body.json()) as Record<string, unknown> };
}

async function health(base: string): Promise<Record<string, unknown>> {
  const r = await request(`${base}/health`, { headers: { authorization: `Bearer ${HEALTH_TOKEN}` } });
  return (await r.body.json()) as Record<string, unknown>;
}

/** Whether a new connection to base is refused (the listener is closed). */
function refused(base: string): Promise<boolean> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    const s = connect(Number(port), hostname);
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });
}

/** A connection with a request begun (so the server holds it open) that send() completes. */
async function begunRequest(base: string, head: string): Promise<{ send(): Promise<string> }> {
  const { hostname, port } = new URL(base);
  const socket: Socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.write(head);
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    async send() {
      socket.write('\r\n');
      await ended;
      return text;
    },
  };
}

test('SIGTERM: not ready and no new connections at once; the running and the queued request both finish; Chromium is closed, exit 0, nothing left', async () => {
  const svc = await startProcess({});
  const running = post(svc.base, 'await new Promise((r) => setTimeout(r, 1500)); return await page.title()');
  await until(async () => (await health(svc.base)).running === 1, 'the script to run');
  const waiting = post(svc.base, 'return await page.title()');
  await until(async () => (await health(svc.base)).queued === 1, 'the second request to queue');
  // A health check begun before the signal and finished after it: its answer is the first one after SIGTERM.
  const probe = await begunRequest(svc.base, 'GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n');
  const family = descendants(svc.child.pid ?? 0);
  assert.ok(family.length >= 2, `Chromium runs under the service: ${family.join(', ')}`);

  svc.child.kill('SIGTERM');
  await until(() => refused(svc.base), 'the listener to close');
  const answer = await probe.send();
  assert.match(answer, /^HTTP\/1\.1 503 /, answer);
  assert.match(answer, /"status":"draining"/, answer);

  const [done, queued] = await Promise.all([running, waiting]);
  assert.equal(done.status, 200, JSON.stringify(done.body));
  assert.equal(done.body.data, 'Example Domain');
  assert.equal(queued.status, 200, JSON.stringify(queued.body));
  assert.equal(queued.body.data, 'Example Domain');

  assert.deepEqual(await svc.exit, { code: 0, signal: null });
  await until(async () => family.every((p) => !alive(p)), 'every process of the service to be gone', {
    timeoutMs: 15_000,
  });
});

test('SIGTERM: a script still running after SHUTDOWN_GRACE_MS is ended with 503, so is the request queued behind it, and the process still exits 0 with nothing left', async () => {
  const svc = await startProcess({ SHUTDOWN_GRACE_MS: '300', SCRIPT_TIMEOUT_MS: '60000' });
  const running = post(svc.base, 'await new Promise((r) => setTimeout(r, 30000)); return 1');
  await until(async () => (await health(svc.base)).running === 1, 'the script to run');
  const waiting = post(svc.base, 'return 1');
  await until(async () => (await health(svc.base)).queued === 1, 'the second request to queue');
  const family = descendants(svc.child.pid ?? 0);
  svc.child.kill('SIGTERM');
  for (const r of await Promise.all([running, waiting])) {
    assert.equal(r.status, 503, JSON.stringify(r.body));
    assert.equal(r.body.code, 'SERVICE_UNAVAILABLE');
    assert.match(String(r.body.error), /shutting down/);
  }
  assert.deepEqual(await svc.exit, { code: 0, signal: null });
  await until(async () => family.every((p) => !alive(p)), 'every process of the service to be gone', {
    timeoutMs: 15_000,
  });
});

test('SIGTERM to the whole process group (kill -- -PGID, systemd KillMode=control-group): nothing restarted, nothing logged as an error, exit 0, nothing left', async () => {
  const svc = await startProcess({ LOG_LEVEL: 'info' }, { detached: true });
  const warm = await post(svc.base, 'return await page.title()');
  assert.equal(warm.status, 200, JSON.stringify(warm.body));
  // One request running when the signal comes: the shutdown ends it (503), not a crash of its slot (500).
  const running = post(svc.base, 'await new Promise((r) => setTimeout(r, 30000)); return 1');
  await until(async () => (await health(svc.base)).running === 1, 'the script to run');
  const family = descendants(svc.child.pid ?? 0);
  // Every process of the group at once: the front, its egress process and its slot processes.
  process.kill(-(svc.child.pid ?? 0), 'SIGTERM');
  const ended = await running;
  assert.equal(ended.status, 503, JSON.stringify(ended.body));
  assert.match(String(ended.body.error), /shutting down/);
  const exit = await svc.exit;
  const lines = svc.lines();
  const errors = lines.filter((l) => typeof l.level === 'number' && l.level >= 50);
  assert.deepEqual(errors, [], 'lines at error level');
  const restarts = lines.filter((l) => /starting another|replacement|did not start/.test(String(l.msg)));
  assert.deepEqual(restarts, [], 'a process was restarted');
  assert.ok(
    lines.some((l) => l.msg === 'shut down'),
    'the shutdown did not finish',
  );
  assert.deepEqual(exit, { code: 0, signal: null });
  await until(async () => family.every((p) => !alive(p)), 'every process of the service to be gone', {
    timeoutMs: 15_000,
  });
});

test('SIGTERM to the whole process group with a request queued behind a running one: it is answered 503 at once, no slot process started', async () => {
  // A grace the test would notice: the queued request waited for all of it while a slot was started for it.
  const svc = await startProcess({ LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '60000' }, { detached: true });
  const warm = await post(svc.base, 'return await page.title()');
  assert.equal(warm.status, 200, JSON.stringify(warm.body));
  const running = post(svc.base, 'await new Promise((r) => setTimeout(r, 30000)); return 1');
  await until(async () => (await health(svc.base)).running === 1, 'the script to run');
  const queued = post(svc.base, 'return await page.title()');
  await until(async () => (await health(svc.base)).queued === 1, 'the second request to wait for the slot');
  const family = descendants(svc.child.pid ?? 0);
  const mark = svc.lines().length;
  process.kill(-(svc.child.pid ?? 0), 'SIGTERM');
  const [a, b] = await Promise.all([running, queued]);
  assert.equal(a.status, 503, JSON.stringify(a.body));
  assert.equal(b.status, 503, JSON.stringify(b.body));
  const exit = await svc.exit;
  const lines = svc.lines().slice(mark);
  assert.deepEqual(
    lines.filter((l) => typeof l.level === 'number' && l.level >= 50),
    [],
    'lines at error level',
  );
  assert.deepEqual(
    lines.filter((l) => /starting|replacement|did not start/.test(String(l.msg))),
    [],
    'a process was started during the shutdown',
  );
  // Answered by the shutdown itself, not at the end of SHUTDOWN_GRACE_MS.
  assert.ok(!lines.some((l) => /grace period over/.test(String(l.msg))), 'the grace period ran out');
  assert.deepEqual(exit, { code: 0, signal: null });
  await until(async () => family.every((p) => !alive(p)), 'every process of the service to be gone', {
    timeoutMs: 15_000,
  });
});

test("SIGTERM to each process of the service in turn, Chromium's too (KillMode=control-group), a request running: nothing restarted, nothing logged as an error", async () => {
  const svc = await startProcess({ LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '10000' }, { detached: true });
  const warm = await post(svc.base, 'return await page.title()');
  assert.equal(warm.status, 200, JSON.stringify(warm.body));
  const running = post(svc.base, 'await new Promise((r) => setTimeout(r, 30000)); return 1');
  await until(async () => (await health(svc.base)).running === 1, 'the script to run');
  // systemd reads the unit's cgroup.procs and signals each process in turn, not a process group.
  const family = [svc.child.pid ?? 0, ...descendants(svc.child.pid ?? 0)];
  for (const p of family) {
    try {
      process.kill(p, 'SIGTERM');
    } catch {
      // gone already
    }
  }
  const ended = await running;
  const exit = await svc.exit;
  const lines = svc.lines();
  assert.deepEqual(
    lines.filter((l) => typeof l.level === 'number' && l.level >= 50),
    [],
    'lines at error level',
  );
  assert.deepEqual(
    lines.filter((l) => /starting another|replacement|did not start|relaunch/.test(String(l.msg))),
    [],
    'a process was restarted',
  );
  assert.equal(ended.status, 503, JSON.stringify(ended.body));
  assert.deepEqual(exit, { code: 0, signal: null });
  await until(async () => family.every((p) => !alive(p)), 'every process of the service to be gone', {
    timeoutMs: 15_000,
  });
});
