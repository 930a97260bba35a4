// The front's last-resort handlers (src/front/server.ts), in the real process. An
// exception nobody caught is a bug of the front: it is logged with its stack, the
// process exits 70 for its process manager to restart it, and it leaves no
// slot process or Chromium behind. A rejection nobody handled is logged with its
// stack and the front goes on serving. The fault is raised by a test-only module
// loaded into the front (test/helpers/front-fault.ts).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { request } from 'undici';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { TEST_KEY } from '../../helpers/service.js';
import { alive, descendants } from '../../helpers/system.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const started = new Set<ChildProcess>();
before(() => fixtures.start());
after(async () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await fixtures.close();
});

interface Front {
  child: ChildProcess;
  base: string;
  /** The front's log, one parsed JSON line each. */
  lines: () => Record<string, unknown>[];
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

async function startFront(fault: 'throw' | 'reject'): Promise<Front> {
  const child = spawn(
    process.execPath,
    ['--no-node-snapshot', '--import', 'tsx', '--import', './test/helpers/front-fault.ts', 'src/front/server.ts'],
    {
      env: {
        ...process.env,
        PORT: '0',
        API_KEYS: TEST_KEY,
        LOG_LEVEL: 'info',
        EGRESS_ALLOWLIST: fixtures.allowEntry,
        PAGESCRIPT_TEST_FRONT_FAULT: fault,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  started.add(child);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  const base = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', () => {
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    exit.then(() => reject(new Error(`the service exited before listening: ${out}`)), reject);
  });
  const lines = (): Record<string, unknown>[] =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { child, base, lines, exit };
}

async function scrape(base: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await request(`${base}/api/scrape`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-key': TEST_KEY },
    body: JSON.stringify({ url: fixtures.url('/example'), script: 'return await page.title()' }),
  });
  return { status: r.statusCode, body: (await r.body.json()) as Record<string, unknown> };
}

const stackOf = (line: Record<string, unknown> | undefined): string =>
  String((line?.err as { stack?: string } | undefined)?.stack);

test('an exception nobody caught in the front: logged with its stack, exit 70, no slot process or Chromium left', async () => {
  const front = await startFront('throw');
  const family = descendants(front.child.pid ?? 0);
  assert.ok(family.length >= 3, `a slot process and its Chromium run under the front: ${family.join(', ')}`);
  front.child.kill('SIGUSR2');
  assert.deepEqual(await front.exit, { code: 70, signal: null });
  const fatal = front.lines().find((l) => l.level === 60 && l.msg === 'uncaught exception; exiting');
  assert.ok(fatal, 'the fatal line is logged');
  assert.match(stackOf(fatal), /a fault of the front the test asked for\n\s+at /);
  await until(() => family.every((p) => !alive(p)), 'the slot process and Chromium to be gone', { timeoutMs: 20_000 });
});

test('a rejection nobody handled in the front: logged with its stack, and the front goes on serving', async () => {
  const front = await startFront('reject');
  front.child.kill('SIGUSR2');
  await until(() => front.lines().some((l) => l.msg === 'unhandled rejection'), 'the rejection to be logged');
  const line = front.lines().find((l) => l.msg === 'unhandled rejection');
  assert.equal(line?.level, 50);
  assert.match(stackOf(line), /a fault of the front the test asked for\n\s+at /);
  const r = await scrape(front.base);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.data, 'Example Domain');
  front.child.kill('SIGTERM');
  assert.deepEqual(await front.exit, { code: 0, signal: null });
});
