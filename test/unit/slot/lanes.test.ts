// Lanes and the page memory watchdog with stand-in Chromium processes: each
// request's renderers are its lane's, so going over PAGE_MEMORY_MB ends that
// request only, whichever other requests run at the same time; what the lane
// held before the request is not the request's.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { readFileSync } from 'node:fs';
import type { BrowserHost } from '../../../src/slot/browser/browser-host.js';
import type { PageLease } from '../../../src/slot/browser/lease.js';
import { BrowserLanes, type LaneLease } from '../../../src/slot/browser/lanes.js';
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

/** A stand-in lane browser; `closes` counts its leases' closes. */
interface FakeHost {
  makingSpares: boolean;
  contextsReady: number;
  idleCloses: number;
  closes: number;
}

function fakeHost(pid: number, outputs: Map<number, (t: string) => void>, onOutput: (t: string) => void): BrowserHost {
  outputs.set(pid, onOutput);
  const host = {
    makingSpares: false,
    closes: 0,
    idleCloses: 0,
    closeIdle(this: { idleCloses: number }) {
      this.idleCloses++;
      return true;
    },
    ready: true,
    sandboxed: true,
    restarts: 0,
    recycles: 0,
    contextsReady: 0,
    pid,
    pids: [pid],
    start: async () => undefined,
    lease: async (): Promise<PageLease> => ({
      page: {} as PageLease['page'],
      pid,
      context: {} as PageLease['context'],
      egress: {} as PageLease['egress'],
      close: async () => void host.closes++,
    }),
    close: async () => undefined,
  };
  return host as unknown as BrowserHost;
}

function lanes(count: number, limitMb = 100, pollMs = 5, idleCloseMs = 0) {
  const procs = fakeProcs();
  const outputs = new Map<number, (t: string) => void>();
  /** Each lane's browser, and the lanes' hook that one of them started or finished a spare. */
  const hosts: (FakeHost & { spares: () => void })[] = [];
  const l = new BrowserLanes({
    count,
    makeHost: (i, onOutput, onSpares) => {
      const h = fakeHost(1000 * (i + 1), outputs, onOutput);
      hosts[i] = Object.assign(h as unknown as FakeHost, { spares: onSpares });
      return h;
    },
    watchdog: new PageMemoryWatchdog({ limitBytes: limitMb * MB, source: procs.source, pollMs }),
    idleCloseMs,
    logger: silentLogger(),
  });
  return { l, procs, outputs, hosts };
}

const exceededBytes = (l: LaneLease): number => l.memoryExceeded?.bytes ?? 0;
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

/** `count` lanes, each its browser (pid 1000, 2000, …) and one renderer (1001, 2001, …); polls an hour apart. */
function restingLanes(count: number, pollMs = HOUR_MS) {
  const made = lanes(count, 100, pollMs);
  for (let i = 1; i <= count; i++) made.procs.trees.set(1000 * i, [browser(1000 * i, 50), renderer(1000 * i + 1, 10)]);
  return made;
}

const HOUR_MS = 3_600_000;

/** For watches polled an hour apart: the returned function runs every watch's next timed poll now. */
function handPolled(t: TestContext): () => void {
  t.mock.timers.enable({ apis: ['setInterval'] });
  return () => t.mock.timers.tick(HOUR_MS);
}

/** Counts the readings of lane `root`'s tree from now on. */
function countReads(procs: ReturnType<typeof fakeProcs>, root: number): () => number {
  let reads = 0;
  const tree = procs.source.tree.bind(procs.source);
  procs.source.tree = (r) => {
    if (r === root) reads++;
    return tree(r);
  };
  return () => reads;
}

test('two requests at once: the one whose renderers go over the limit is ended, the other is not touched', async () => {
  const { l, procs } = lanes(2);
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 10)]);
  procs.trees.set(2000, [browser(2000, 50), renderer(2001, 10), renderer(2002, 10)]);
  const a = await l.lease('req');
  const b = await l.lease('req');
  const ended = new Promise<void>((r) => b.onMemoryExceeded(r));
  // b's frames of other sites grow by 60 MiB each.
  procs.trees.set(2000, [browser(2000, 50), renderer(2001, 70), renderer(2002, 70)]);
  await ended;
  assert.deepEqual(procs.killed.sort(), [2001, 2002]);
  assert.equal(a.memoryExceeded, undefined);
  assert.equal(b.memoryExceeded?.renderers, 2);
  await Promise.all([a.close(), b.close()]);
});

test('a renderer the lane held before the request counts by its growth; one started since, or a reused pid, whole', async () => {
  const { l, procs } = lanes(1);
  // The blank page the request is given (30 MiB) and a page of the service's own (40 MiB).
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 30), renderer(1002, 40)]);
  const a = await l.lease('req');
  assert.equal(a.memoryExceeded, undefined);
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 90), renderer(1002, 40)]);
  await until(() => a.memoryBytes === 60 * MB, 'the growth of the blank page counted');
  // Pid 1002 is now another process (a later start): all of its 45 MiB is the request's.
  const ended = new Promise<void>((r) => a.onMemoryExceeded(r));
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 90), renderer(1002, 45, 2)]);
  await ended;
  assert.equal(exceededBytes(a), 105 * MB);
  await a.close();
});

test('closing the request stops the watch at once: the next blank page, made as the context goes, is not killed', async (t) => {
  const { l, procs } = restingLanes(1);
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
  // Every poll the watch would have made: none reads the lane any more.
  poll();
  poll();
  assert.equal(reads(), 0, 'the watch no longer reads the lane');
  assert.deepEqual(procs.killed, [1001], 'the spare made after the request was not killed');
});

test('over the limit, the renderers are ended whatever their command line says now; the browser, zygotes and GPU are not', async () => {
  const { l, procs } = lanes(1);
  const proc = (pid: number, type: string, depth: number, start = 1): ProcessMemory => ({
    pid,
    type,
    bytes: 10 * MB,
    cpuMs: 0,
    start,
    depth,
  });
  const lane = [browser(1000, 50), proc(1010, 'zygote', 1), proc(1011, 'zygote', 2), proc(1012, 'gpu-process', 2)];
  // The blank page the request is given, a renderer before the request.
  procs.trees.set(1000, [...lane, proc(1020, 'renderer', 3)]);
  const a = await l.lease('req');
  const ended = new Promise<void>((r) => a.onMemoryExceeded(r));
  // Compromised renderers that renamed themselves: the request's blank page, and a new one.
  procs.trees.set(1000, [
    ...lane,
    { ...proc(1020, 'zygote', 3), bytes: 90 * MB },
    { ...proc(1030, 'utility', 3, 5), bytes: 60 * MB },
    proc(1031, 'renderer', 3, 5),
  ]);
  await ended;
  assert.deepEqual(procs.killed.sort(), [1020, 1030, 1031]);
  await a.close();
});

test("the browser side's growth counts (blobs, IndexedDB, Cache Storage), not its size at the start", async () => {
  const { l, procs } = lanes(1);
  procs.trees.set(1000, [browser(1000, 300), renderer(1001, 10)]);
  const a = await l.lease('req');
  assert.equal(a.memoryExceeded, undefined, 'a large browser process at the start is not the request');
  const ended = new Promise<void>((r) => a.onMemoryExceeded(r));
  procs.trees.set(1000, [browser(1000, 420), renderer(1001, 10)]);
  await ended;
  assert.equal(exceededBytes(a), 120 * MB);
  await a.close();
});

test("a renderer that dies of V8's own heap limit (Chromium says so on stderr) ends that lane's request only", async () => {
  const { l, procs, outputs } = lanes(2);
  procs.trees.set(1000, [browser(1000, 50)]);
  procs.trees.set(2000, [browser(2000, 50)]);
  const a = await l.lease('req');
  const b = await l.lease('req');
  // The line arrives in two pieces.
  outputs.get(2000)?.('[1:1:ERROR:v8_oom.cc(49)] V8 javascript ');
  outputs.get(2000)?.('OOM (Reached heap limit).\n');
  assert.ok(b.memoryExceeded);
  assert.equal(a.memoryExceeded, undefined);
  await Promise.all([a.close(), b.close()]);
});

test('a request waits for a lane while every lane is busy, and gets the one that is closed', async () => {
  const { l, procs } = lanes(1);
  procs.trees.set(1000, [browser(1000, 50)]);
  const a = await l.lease('req');
  let got = false;
  const next = l.lease('req').then((x) => {
    got = true;
    return x;
  });
  await new Promise((r) => setImmediate(r));
  assert.equal(got, false);
  await a.close();
  const b = await next;
  assert.equal(b.memoryExceeded, undefined);
  await b.close();
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

test("closing a request kills its own renderers first (a loop or a flood would hold the close up), never the lane's browser", async () => {
  const { l, procs, hosts } = lanes(1);
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
  assert.equal((hosts[0] as FakeHost).closes, 1, 'then its context is closed');
});

test('a request takes a free lane with its context ready before one still making it (a lane just released)', async () => {
  const { l, procs, hosts } = lanes(2);
  procs.trees.set(1000, [browser(1000, 50)]);
  procs.trees.set(2000, [browser(2000, 50)]);
  const first = await l.lease('req');
  assert.equal(first.pid, 1000, 'no lane has a context ready: the lowest');
  await first.close();
  (hosts[1] as FakeHost).contextsReady = 1;
  const second = await l.lease('req');
  assert.equal(second.pid, 2000, 'lane 0 is still making its next context; lane 1 has one');
  (hosts[0] as FakeHost).contextsReady = 1;
  const third = await l.lease('req');
  assert.equal(third.pid, 1000);
  await Promise.all([second.close(), third.close()]);
});

test("a request is read at its lease and its own polls only, not again at each other request's lease and release", async () => {
  // Each reading walks the lane in /proc: never at every lease, release and context made ahead beside it.
  const { l, procs, hosts } = restingLanes(2);
  const reads = countReads(procs, 1000);
  const a = await l.lease('within');
  assert.equal(reads(), 1, 'one reading at its lease: the baseline is its first poll');
  const b = await l.lease('other');
  const other = hosts[1] as FakeHost & { spares: () => void };
  other.makingSpares = true;
  other.spares();
  await b.close();
  assert.equal(reads(), 1, 'not read again beside the other request');
  await a.close();
});

test('once every lane has been free for idleCloseMs, the Chromiums past the first are closed; a lease before then keeps them', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { l, hosts } = lanes(3, 100, HOUR_MS, 1_000);
  const closed = (): number[] => hosts.map((h) => h.idleCloses);
  const a = await l.lease('a');
  const b = await l.lease('b');
  await a.close();
  t.mock.timers.tick(5_000);
  assert.deepEqual(closed(), [0, 0, 0], 'not while a lane is busy');
  await b.close();
  t.mock.timers.tick(999);
  const c = await l.lease('c');
  t.mock.timers.tick(5_000);
  assert.deepEqual(closed(), [0, 0, 0], 'a lease within the idle time keeps them');
  await c.close();
  t.mock.timers.tick(1_000);
  assert.deepEqual(closed(), [0, 1, 1], 'all free for idleCloseMs: every lane but the first');
  await l.close();
});
