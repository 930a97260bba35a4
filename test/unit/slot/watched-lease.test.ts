// The slot's watched leases and the page memory watchdog with stand-in
// Chromium processes: the Chromium serves one request at a time, so its
// renderers are that request's and going over PAGE_MEMORY_MB ends it; what the
// Chromium held before the request is not the request's.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { readFileSync } from 'node:fs';
import type { PageLease } from '../../../src/slot/browser/lease.js';
import { WatchedLeases, type WatchedLease } from '../../../src/slot/browser/watched-lease.js';
import {
  PageMemoryWatchdog,
  procfsSource,
  type ProcessMemory,
  type ProcessSource,
} from '../../../src/slot/browser/page-memory.js';
import { silentLogger } from '../../../src/common/log.js';
import { until } from '../../helpers/wait.js';

const MB = 2 ** 20;

/** Processes per browser pid, changed by the test; kills are recorded and remove the process. */
function fakeProcs(): {
  source: ProcessSource;
  trees: Map<number, ProcessMemory[]>;
  killed: number[];
} {
  const trees = new Map<number, ProcessMemory[]>();
  const killed: number[] = [];
  return {
    trees,
    killed,
    source: {
      tree: (root) => trees.get(root) ?? [],
      kill: (pid) => {
        killed.push(pid);
        for (const [root, list] of trees)
          trees.set(
            root,
            list.filter((p) => p.pid !== pid),
          );
      },
    },
  };
}

/**
 * The slot's leases over a stand-in browser host (its Chromium is pid 1000): `closes` counts its leases'
 * closes; while `failing`, a lease's context cannot be made.
 */
function leases(limitMb = 100, pollMs = 5) {
  const procs = fakeProcs();
  const host = { closes: 0, failing: false };
  const l = new WatchedLeases({
    open: async (): Promise<PageLease> => {
      if (host.failing) throw new Error('no context');
      return {
        page: {} as PageLease['page'],
        pid: 1000,
        context: {} as PageLease['context'],
        egress: {} as PageLease['egress'],
        close: async () => void host.closes++,
      };
    },
    watchdog: new PageMemoryWatchdog({ limitBytes: limitMb * MB, source: procs.source, pollMs }),
    logger: silentLogger(),
  });
  return { l, procs, host };
}

const exceededBytes = (l: WatchedLease): number => l.memoryExceeded?.bytes ?? 0;
const renderer = (pid: number, mb: number, start = 1, cpuMs = 0): ProcessMemory => ({
  pid,
  type: 'renderer',
  bytes: mb * MB,
  start,
  depth: 2,
  cpuMs,
});
const browser = (pid: number, mb: number, cpuMs = 0): ProcessMemory => ({
  pid,
  type: 'browser',
  bytes: mb * MB,
  start: 1,
  depth: 0,
  cpuMs,
});

/** Its Chromium (pid 1000) and one renderer (1001) at rest; polls an hour apart. */
function restingLeases(pollMs = HOUR_MS) {
  const made = leases(100, pollMs);
  made.procs.trees.set(1000, [browser(1000, 50), renderer(1001, 10)]);
  return made;
}

const HOUR_MS = 3_600_000;

/** For watches polled an hour apart: the returned function runs every watch's next timed poll now. */
function handPolled(t: TestContext): () => void {
  t.mock.timers.enable({ apis: ['setInterval'] });
  return () => t.mock.timers.tick(HOUR_MS);
}

/** Counts the readings of the tree of Chromium `root` from now on. */
function countReads(procs: ReturnType<typeof fakeProcs>, root: number): () => number {
  let reads = 0;
  const tree = procs.source.tree.bind(procs.source);
  procs.source.tree = (r) => {
    if (r === root) reads++;
    return tree(r);
  };
  return () => reads;
}

test("a request whose renderers go over the limit is ended, its frames of other sites' renderers with it", async () => {
  const { l, procs } = leases();
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 10), renderer(1002, 10)]);
  const a = await l.lease('req');
  const ended = new Promise<void>((r) => a.onMemoryExceeded(r));
  // Its frames of other sites grow by 60 MiB each.
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 70), renderer(1002, 70)]);
  await ended;
  assert.deepEqual(procs.killed.sort(), [1001, 1002]);
  assert.equal(a.memoryExceeded?.renderers, 2);
  assert.equal(l.memoryKills, 1);
  await a.close();
});

test('a renderer the Chromium held before the request counts by its growth; one started since, or a reused pid, whole', async () => {
  const { l, procs } = leases();
  // The blank page the request is given (30 MiB) and a page of the service's own (40 MiB).
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 30), renderer(1002, 40)]);
  const a = await l.lease('req');
  assert.equal(a.memoryExceeded, undefined);
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 90), renderer(1002, 40)]);
  await until(() => l.pageMemoryBytes === 60 * MB, 'the growth of the blank page counted');
  // Pid 1002 is now another process (a later start): all of its 45 MiB is the request's.
  const ended = new Promise<void>((r) => a.onMemoryExceeded(r));
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 90), renderer(1002, 45, 2)]);
  await ended;
  assert.equal(exceededBytes(a), 105 * MB);
  await a.close();
  assert.equal(l.pageMemoryBytes, 0, 'nothing is leased');
});

test('closing the request stops the watch at once: the next blank page, made as the context goes, is not killed', async (t) => {
  const { l, procs } = restingLeases();
  const poll = handPolled(t);
  procs.trees.set(1000, [browser(1000, 50)]);
  const a = await l.lease('req');
  const ended = new Promise<void>((r) => a.onMemoryExceeded(r));
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 150)]);
  poll();
  await ended;
  assert.deepEqual(procs.killed, [1001]);
  const closing = a.close();
  procs.trees.set(1000, [browser(1000, 50), renderer(1003, 20)]);
  await closing;
  const reads = countReads(procs, 1000);
  // Every poll the watch would have made: none reads the Chromium any more.
  poll();
  poll();
  assert.equal(reads(), 0, 'the watch no longer reads the Chromium');
  assert.deepEqual(procs.killed, [1001], 'the spare made after the request was not killed');
});

test('over the limit, the renderers are ended whatever their command line says now; the browser, zygotes and GPU are not', async () => {
  const { l, procs } = leases();
  const proc = (pid: number, type: string, depth: number, start = 1): ProcessMemory => ({
    pid,
    type,
    bytes: 10 * MB,
    cpuMs: 0,
    start,
    depth,
  });
  const own = [browser(1000, 50), proc(1010, 'zygote', 1), proc(1011, 'zygote', 2), proc(1012, 'gpu-process', 2)];
  // The blank page the request is given, a renderer before the request.
  procs.trees.set(1000, [...own, proc(1020, 'renderer', 3)]);
  const a = await l.lease('req');
  const ended = new Promise<void>((r) => a.onMemoryExceeded(r));
  // Compromised renderers that renamed themselves: the request's blank page, and a new one.
  procs.trees.set(1000, [
    ...own,
    { ...proc(1020, 'zygote', 3), bytes: 90 * MB },
    { ...proc(1030, 'utility', 3, 5), bytes: 60 * MB },
    proc(1031, 'renderer', 3, 5),
  ]);
  await ended;
  assert.deepEqual(procs.killed.sort(), [1020, 1030, 1031]);
  await a.close();
});

test("the browser side's growth counts (blobs, IndexedDB, Cache Storage), not its size at the start", async () => {
  const { l, procs } = leases();
  procs.trees.set(1000, [browser(1000, 300), renderer(1001, 10)]);
  const a = await l.lease('req');
  assert.equal(a.memoryExceeded, undefined, 'a large browser process at the start is not the request');
  const ended = new Promise<void>((r) => a.onMemoryExceeded(r));
  procs.trees.set(1000, [browser(1000, 420), renderer(1001, 10)]);
  await ended;
  assert.equal(exceededBytes(a), 120 * MB);
  await a.close();
});

test("a renderer that dies of V8's own heap limit (Chromium says so on stderr) ends the request", async () => {
  const { l, procs } = leases();
  procs.trees.set(1000, [browser(1000, 50)]);
  const a = await l.lease('req');
  // The line arrives in two pieces.
  l.chromiumOutput('[1:1:ERROR:v8_oom.cc(49)] V8 javascript ');
  assert.equal(a.memoryExceeded, undefined, 'half a line');
  l.chromiumOutput('OOM (Reached heap limit).\n');
  assert.ok(a.memoryExceeded);
  assert.equal(l.memoryKills, 1);
  await a.close();
});

test('an out-of-memory line written between requests does not end the next request at its next line of output', async () => {
  const { l, procs } = leases();
  procs.trees.set(1000, [browser(1000, 50)]);
  // The renderer of a request already closed, or a spare's.
  l.chromiumOutput('[1:1:ERROR:v8_oom.cc(49)] V8 javascript OOM (Reached heap limit).\n');
  const a = await l.lease('req');
  l.chromiumOutput('[1:1:WARNING:some_file.cc(1)] another line\n');
  assert.equal(a.memoryExceeded, undefined, 'the next line of output is not the earlier one again');
  await a.close();
  assert.equal(l.memoryKills, 0);
});

test('a second lease while one is held is refused at once, with a clear error; once the first is closed, the next is given', async () => {
  const { l, procs } = leases();
  procs.trees.set(1000, [browser(1000, 50)]);
  const a = await l.lease('req');
  await assert.rejects(l.lease('other'), /the browser is leased to another request/);
  assert.equal(a.memoryExceeded, undefined, 'the first is not touched');
  await a.close();
  const b = await l.lease('req');
  assert.equal(b.memoryExceeded, undefined);
  await b.close();
});

test('a lease whose context could not be made leaves the browser free', async () => {
  const { l, procs, host } = restingLeases();
  host.failing = true;
  await assert.rejects(l.lease('req'), /no context/);
  assert.deepEqual(procs.killed, [], 'nothing was watched');
  host.failing = false;
  const a = await l.lease('req');
  await a.close();
});

test("/proc: a process's children (started from any thread) are found, with their memory", async () => {
  const { spawn } = await import('node:child_process');
  const child = spawn('sleep', ['30']);
  try {
    await new Promise((r) => child.once('spawn', r));
    const tree = procfsSource().tree(process.pid);
    assert.equal(tree[0]?.type, 'browser', 'the root');
    const found = tree.find((p) => p.pid === child.pid);
    assert.ok(found, 'the child is in the tree');
    assert.equal(found.type, 'other');
    assert.equal(found.depth, 1);
    assert.ok(found.bytes > 0);
  } finally {
    child.kill('SIGKILL');
  }
});

test('/proc: a process that rewrites its command line later stays what it was first seen as', async () => {
  const { spawn } = await import('node:child_process');
  // SECURITY: a compromised renderer can rewrite its command line, not what the watchdog saw of it first.
  // bash reads a line, then replaces itself (same pid and start time) with a program whose command line says zygote.
  const child = spawn('bash', ['-c', 'read x; exec -a "$TITLE" sleep 30', 'bash', '--type=renderer'], {
    stdio: ['pipe', 'ignore', 'inherit'],
    env: { ...process.env, TITLE: 'x --type=zygote' },
  });
  try {
    await new Promise((r) => child.once('spawn', r));
    const source = procfsSource();
    const type = (): string | undefined => source.tree(process.pid).find((p) => p.pid === child.pid)?.type;
    await until(() => type() === 'renderer', 'the child to be seen as a renderer');
    child.stdin.write('go\n');
    await until(
      () => readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').includes('--type=zygote'),
      'the new command line',
    );
    assert.equal(type(), 'renderer');
    assert.equal(
      procfsSource()
        .tree(process.pid)
        .find((p) => p.pid === child.pid)?.type,
      'zygote',
      'a fresh reader sees the new line',
    );
  } finally {
    child.kill('SIGKILL');
  }
});

test("closing a request kills its own renderers first (a loop or a flood would hold the close up), never its Chromium's browser", async () => {
  const { l, procs, host } = leases();
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 10)]);
  const a = await l.lease('req');
  // A frame of another site started during the request, and a zygote the browser launched before it.
  procs.trees.set(1000, [
    browser(1000, 50),
    renderer(1001, 10),
    renderer(1005, 10, 7),
    { pid: 1002, type: 'zygote', bytes: MB, start: 1, depth: 1, cpuMs: 0 },
  ]);
  await a.close();
  assert.deepEqual(procs.killed.sort(), [1001, 1005]);
  assert.equal(host.closes, 1, 'then its context is closed');
});

test('a request is read at its lease and its own polls only: the baseline is its first poll', async (t) => {
  // Each reading walks the Chromium in /proc: one at the lease, not two.
  const { l, procs } = restingLeases();
  const poll = handPolled(t);
  const reads = countReads(procs, 1000);
  const a = await l.lease('req');
  assert.equal(reads(), 1, 'one reading at its lease: the baseline is its first poll');
  poll();
  assert.equal(reads(), 2, 'then one at each poll');
  await a.close();
});
