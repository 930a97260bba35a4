// What code a tenant left behind in a slot can reach of the slot's later
// tenants, tried as such code would (a process of the slot's user beside the
// running service; src/front/host/slot-privacy.ts):
// - the memory and environment of the slot process and of every process of
//   its Chromium, while a request runs there: refused (non-dumpable);
// - the slot's /tmp, /var/tmp and /dev/shm: one tmpfs of the slot's own,
//   bounded, counted in the slot's memory cgroup, emptied before the next
//   request; the machine's own are out of its sight.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PROFILE_PREFIX } from '../../../src/slot/browser/chromium-process.js';
import { slotTmpMb } from '../../../src/front/host/slot-privacy.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { startTestService, type TestService } from '../../helpers/service.js';
import { slotGroups } from '../../helpers/slot-groups.js';
import { descendants } from '../../helpers/system.js';
import { until } from '../../helpers/wait.js';

const PAGE_MEMORY_MB = 128;
const MiB = 2 ** 20;
const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const root = process.getuid?.() === 0;
let svc: TestService;
let health: Record<string, unknown> = {};
const started: ChildProcess[] = [];
/** What the writer names its files (on the machine only if the slot's own places fail: removed after). */
const marker = `left-${process.pid}`;

before(async () => {
  if (!root) return;
  await fixtures.start();
  svc = await startTestService({
    EGRESS_ALLOWLIST: fixtures.allowEntry,
    MAX_CONCURRENCY: '1',
    IDLE_SLOT_CLOSE_MS: '0',
    PAGE_MEMORY_MB: String(PAGE_MEMORY_MB),
  });
  health = (await svc.raw('GET', '/health')).body;
});

after(async () => {
  for (const c of started) if (c.exitCode === null) c.kill('SIGKILL');
  await svc?.close();
  if (root) await fixtures.close();
  for (const dir of ['/dev/shm', '/tmp', '/var/tmp'])
    for (const name of readdirSync(dir))
      if (name.startsWith(marker)) rmSync(join(dir, name), { recursive: true, force: true });
});

/** Why this machine cannot show `field` (`/health`'s `off: <why>`), or false. */
const skipFor = (field: string): string | false =>
  !root ? 'the service is not root here' : health[field] === 'on' ? false : `${field}: ${String(health[field])}`;

const slotPid = (): number => svc.service.slots.slotPids[0] as number;
const user = (): { uid: number; gid: number } => svc.service.slots.users?.[0] as { uid: number; gid: number };
const cmdline = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
};

function scrape(script: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return svc.post({ url: fixtures.url('/example'), script });
}

/** What a process of the slot's user gets trying to read `pids`' memory and environment, and to ptrace them. */
function attemptsAs(u: { uid: number; gid: number }, pids: number[]): Record<string, Record<string, string>> {
  const r = spawnSync(
    '/usr/bin/python3',
    [
      '-c',
      `import ctypes, json, os, sys
l = ctypes.CDLL(None, use_errno=True)
out = {}
for pid in sys.argv[1:]:
    got = {}
    for f in ('mem', 'environ'):
        try:
            with open('/proc/%s/%s' % (pid, f), 'rb') as fh:
                fh.read(1) if f == 'environ' else None
            got[f] = 'ok'
        except OSError as e:
            got[f] = os.strerror(e.errno)
    r = l.ptrace(16, int(pid), 0, 0)
    got['ptrace'] = 'attached' if r == 0 else os.strerror(ctypes.get_errno())
    if r == 0:
        l.ptrace(17, int(pid), 0, 0)
    out[pid] = got
print(json.dumps(out))`,
      ...pids.map(String),
    ],
    { uid: u.uid, gid: u.gid, encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Record<string, Record<string, string>>;
}

describe("a slot's processes", () => {
  test("a process of the slot's user beside a running request cannot read the memory or environment of the slot process or any of its Chromium's, nor ptrace them", async (t) => {
    const skip = skipFor('slotNonDumpable');
    if (skip) return t.skip(skip);
    const u = user();
    // Control: the same attempts reach a process of the slot's user that is not the slot's.
    const own = spawn('/bin/sleep', ['30'], { uid: u.uid, gid: u.gid });
    started.push(own);
    await until(() => cmdline(own.pid ?? 0).startsWith('/bin/sleep'), 'the control process to run');
    assert.deepEqual(attemptsAs(u, [own.pid ?? 0])[String(own.pid)], {
      mem: 'ok',
      environ: 'ok',
      ptrace: 'attached',
    });
    own.kill('SIGKILL');

    const running = scrape('await new Promise((r) => setTimeout(r, 4000)); return await page.title()');
    let targets: number[] = [];
    await until(() => {
      targets = [slotPid(), ...descendants(slotPid())];
      return targets.some((p) => cmdline(p).includes('--type=renderer'));
    }, "the request's page to have its renderer");
    assert.ok(targets.filter((p) => /chrom/.test(cmdline(p))).length >= 3, 'Chromium and its processes');
    const got = attemptsAs(u, targets);
    for (const pid of targets) {
      // A renderer of the last page may have exited meanwhile: only the ones still there are asked about.
      if (cmdline(pid) === '') continue;
      assert.deepEqual(
        got[String(pid)],
        { mem: 'Permission denied', environ: 'Permission denied', ptrace: 'Operation not permitted' },
        `process ${pid} of the slot (${cmdline(pid).slice(0, 80)})`,
      );
    }
    const r = await running;
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data, 'Example Domain');
  });
});

describe('SLOT_NON_DUMPABLE=off', () => {
  test("Chromium runs from its readable binary with its own sandbox, readable by the slot's user; the slot process is still not, and /health says so", async (t) => {
    const skip = skipFor('slotNonDumpable');
    if (skip) return t.skip(skip);
    const off = await startTestService({
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      MAX_CONCURRENCY: '1',
      IDLE_SLOT_CLOSE_MS: '0',
      SLOT_NON_DUMPABLE: 'off',
    });
    try {
      assert.equal((await off.raw('GET', '/health')).body.slotNonDumpable, 'off: SLOT_NON_DUMPABLE=off');
      const pid = off.service.slots.slotPids[0] as number;
      const u = off.service.slots.users?.[0] as { uid: number; gid: number };
      const running = off.post({
        url: fixtures.url('/example'),
        script: 'await new Promise((r) => setTimeout(r, 3000)); return await page.title()',
      });
      let browser: number | undefined;
      await until(() => {
        const tree = descendants(pid);
        browser = tree.find((p) => /chrom/.test(cmdline(p)) && !cmdline(p).includes('--type='));
        return browser !== undefined && tree.some((p) => cmdline(p).includes('--type=renderer'));
      }, "the request's page to have its renderer");
      const b = browser as number;
      assert.doesNotMatch(cmdline(b), /exec-only/, 'the readable binary');
      const got = attemptsAs(u, [pid, b]);
      assert.deepEqual(got[String(pid)], {
        mem: 'Permission denied',
        environ: 'Permission denied',
        ptrace: 'Operation not permitted',
      });
      assert.equal(got[String(b)]?.mem, 'ok', "the trade: Chromium's browser is readable by the slot's user");
      const r = await running;
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.data, 'Example Domain');
      assert.notEqual((await off.raw('GET', '/health')).body.chromiumSandbox, false, 'Chromium kept its own sandbox');
    } finally {
      await off.close();
    }
  });
});

describe("a slot's writable places", () => {
  test("a slot user writing 1 GiB to /dev/shm is refused at its slot's bound, counted in the slot's memory, and nothing it wrote is there for the next request", async (t) => {
    const skip = skipFor('slotPrivateTmp');
    if (skip) return t.skip(skip);
    const u = user();
    const pid = slotPid();
    const memoryDir = svc.service.slots.memoryGroupDir(0);
    const usage = (): number =>
      memoryDir === undefined ? NaN : Number(readFileSync(join(memoryDir, 'memory.usage_in_bytes'), 'utf8'));
    const before = usage();
    // During a request, a process of the slot's user in the slot's mount namespace and groups, as escaped code is
    // (what is left there outside the slot's tree when the job ends is killed: it writes while the request runs).
    const hits = fixtures.hits.get('/example') ?? 0;
    const running = scrape('await new Promise((r) => setTimeout(r, 3000)); return 1');
    // Its page loaded: the job has started (and swept its slot's groups).
    await until(() => (fixtures.hits.get('/example') ?? 0) > hits, "the request's page to load");
    const writer = spawn(
      'nsenter',
      [
        '--target',
        String(pid),
        '--mount',
        '--setuid',
        String(u.uid),
        '--setgid',
        String(u.gid),
        '--',
        '/bin/sh',
        '-c',
        `kill -STOP $$
         dd if=/dev/zero of=/dev/shm/${marker} bs=1M count=1024 2>&1
         echo x > /tmp/${marker}.tmp; echo x > /var/tmp/${marker}.var
         mkdir -p /tmp/${marker}.dir/deep && echo x > /tmp/${marker}.dir/deep/f && chmod 0500 /tmp/${marker}.dir/deep /tmp/${marker}.dir
         stat -c 'size=%s' /dev/shm/${marker}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    started.push(writer);
    const writerPid = writer.pid as number;
    await until(() => / T /.test(readFileSync(`/proc/${writerPid}/stat`, 'utf8')), 'the writer to wait for its groups');
    for (const dir of slotGroups(svc, 0)) writeFileSync(join(dir, 'cgroup.procs'), String(writerPid));
    let out = '';
    writer.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    writer.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<string>((r) => writer.once('exit', (code, signal) => r(`${code ?? signal}`)));
    process.kill(writerPid, 'SIGCONT');
    const status = await exited;
    assert.match(out, /No space left on device/, `${out} (exit: ${status})`);
    const size = Number(/size=(\d+)/.exec(out)?.[1]);
    const bound = slotTmpMb(PAGE_MEMORY_MB) * MiB;
    assert.ok(size > bound / 2 && size <= bound, `${size} bytes written, the bound is ${bound}`);
    // In RAM, counted in the slot's memory group (the writer's).
    if (memoryDir !== undefined)
      assert.ok(usage() - before >= size / 2, `the slot's group holds ${usage() - before} more`);
    // The machine's own /dev/shm, /tmp and /var/tmp never saw it.
    for (const p of [`/dev/shm/${marker}`, `/tmp/${marker}.tmp`, `/var/tmp/${marker}.var`])
      assert.ok(!existsSync(p), `${p} is on the machine`);
    const inSlot = `/proc/${pid}/root/tmp`;
    assert.ok(existsSync(join(inSlot, marker)), "control: it is in the slot's tmpfs (/dev/shm is /tmp there)");

    const answered = await running;
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    // The slot is free once its job's context is closed and its tmpfs emptied: before the next request.
    await until(() => svc.service.slots.busySlots[0] === false, 'the slot to be free again');
    assert.equal(slotPid(), pid, 'the same slot process serves on');
    const left = readdirSync(inSlot);
    assert.deepEqual(
      left.filter((n) => !n.startsWith(PROFILE_PREFIX)),
      [],
      'only the live Chromium profile stays',
    );
    assert.equal(left.length, 1, left.join(' '));
    if (memoryDir !== undefined)
      assert.ok(usage() - before < size / 2, `the slot's group still holds ${usage() - before} more`);
    const next = await scrape('return await page.title()');
    assert.equal(next.status, 200, JSON.stringify(next.body));
  });
});
