// Lanes and the page memory watchdog with stand-in Chromium processes: each
// request's renderers are its lane's, so going over PAGE_MEMORY_MB ends that
// request only, whichever other requests run at the same time; what the lane
// held before the request is not the request's.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import type { BrowserHost } from '../../src/slot/browser/browser-host.js';
import type { PageLease } from '../../src/slot/browser/lease.js';
import { BrowserLanes, type LaneLease } from '../../src/slot/browser/lanes.js';
import {
  BACKGROUND_NICE,
  PAGE_CPU_BUDGET_MS,
  PageMemoryWatchdog,
  procfsSource,
  type ProcessMemory,
  type ProcessSource,
} from '../../src/slot/browser/page-memory.js';
import { silentLogger } from '../../src/common/log.js';
import { until } from '../helpers/wait.js';

const MB = 2 ** 20;

/** Processes per browser pid, changed by the test; kills are recorded and remove the process. */
function fakeProcs(): {
  source: ProcessSource;
  trees: Map<number, ProcessMemory[]>;
  killed: number[];
  lowered: number[];
  /** Processes stopped now. */
  stopped: Set<number>;
  /** Each stop and continue, in order: +pid stopped, -pid continued. */
  pauses: number[];
} {
  const trees = new Map<number, ProcessMemory[]>();
  const killed: number[] = [];
  const lowered: number[] = [];
  const stopped = new Set<number>();
  const pauses: number[] = [];
  return {
    trees,
    killed,
    lowered,
    stopped,
    pauses,
    source: {
      deprioritize: (pid) => lowered.push(pid),
      pause: (pid, paused) => {
        pauses.push(paused ? pid : -pid);
        if (paused) stopped.add(pid);
        else stopped.delete(pid);
      },
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

/** A stand-in lane browser; `held` records each holdMessages of its leases, in order. */
interface FakeHost {
  makingSpares: boolean;
  contextsReady: number;
  idleCloses: number;
  /** Each lease's close: whether it was called as heavy (past its CPU budget). */
  readonly closes: (boolean | undefined)[];
  readonly held: boolean[];
}

function fakeHost(pid: number, outputs: Map<number, (t: string) => void>, onOutput: (t: string) => void): BrowserHost {
  outputs.set(pid, onOutput);
  const held: boolean[] = [];
  const closes: (boolean | undefined)[] = [];
  const lease = (): PageLease => ({
    page: {} as PageLease['page'],
    pid,
    context: {} as PageLease['context'],
    egress: {} as PageLease['egress'],
    holdMessages: (h) => held.push(h),
    close: async (heavy) => void closes.push(heavy),
  });
  return {
    makingSpares: false,
    held,
    closes,
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
    lease: async () => lease(),
    close: async () => undefined,
  } as unknown as BrowserHost;
}

function lanes(count: number, limitMb = 100, pauseMs = 0, pollMs = 5, idleCloseMs = 0) {
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
    watchdog: new PageMemoryWatchdog({ limitBytes: limitMb * MB, source: procs.source, pollMs, pauseMs }),
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

/**
 * `count` lanes, each its browser (pid 1000, 2000, …) and one renderer (1001,
 * 2001, …) that used no CPU yet. Polls an hour apart unless told: only leases
 * and releases move the CPU pause then.
 */
function restingLanes(count: number, pauseMs = 3_000_000, pollMs = HOUR_MS) {
  const made = lanes(count, 100, pauseMs, pollMs);
  for (let i = 1; i <= count; i++) made.procs.trees.set(1000 * i, [browser(1000 * i, 50), renderer(1000 * i + 1, 10)]);
  return made;
}

const HOUR_MS = 3_600_000;

/**
 * For watches polled an hour apart: the returned function runs every watch's
 * next timed poll now. A request is read at its polls; another request's lease
 * or release (or a context made ahead) reads it again only once it is past its
 * budget (page-memory.ts recheck), as it then decides its pause.
 */
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

/** Waits until the watch of lane `root` has read its tree `times` more: each reading acts on what it read before returning. */
async function readAgain(procs: ReturnType<typeof fakeProcs>, root: number, times = 1): Promise<void> {
  const reads = countReads(procs, root);
  await until(() => reads() >= times, `the lane read ${times} more time(s)`, { everyMs: 1 });
}

/** The renderer of lane `root` has used `cpuMs` of CPU, far past PAGE_CPU_BUDGET_MS unless told. */
function busy(procs: ReturnType<typeof fakeProcs>, root: number, cpuMs = 5_000): void {
  procs.trees.set(root, [browser(root, 50), renderer(root + 1, 10, 1, cpuMs)]);
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

test('a request past its CPU budget, summed over its lane, has its own processes moved to nice 19, each once; never the browser', async () => {
  const { l, procs } = lanes(1);
  // The blank page's renderer had used 900 ms and the browser 5 s before the request: that is not the request's.
  procs.trees.set(1000, [browser(1000, 50, 5_000), renderer(1001, 10, 1, 900)]);
  const a = await l.lease('req');
  const grow = (browserMs: number, blank: number, popup?: number): void => {
    procs.trees.set(1000, [
      browser(1000, 50, browserMs),
      renderer(1001, 10, 1, blank),
      ...(popup === undefined ? [] : [renderer(1002, 10, 7, popup)]),
    ]);
  };
  // 100 ms in the browser, 100 in the page, 50 in a popup started since (counted whole): exactly the budget.
  grow(5_100, 1_000, PAGE_CPU_BUDGET_MS - 200);
  await readAgain(procs, 1000);
  assert.deepEqual(procs.lowered, [], 'exactly the budget is still within it');
  grow(5_100, 1_001, PAGE_CPU_BUDGET_MS - 200);
  await until(() => procs.lowered.length > 0, 'the request to be lowered');
  assert.deepEqual(procs.lowered.sort(), [1001, 1002], 'its page and its popup, not the browser');
  // A renderer started later (a cross-site navigation) is lowered as it appears, the others not again.
  procs.trees.set(1000, [browser(1000, 50, 9_000), renderer(1001, 10, 1, 2_000), renderer(1003, 10, 9, 0)]);
  await until(() => procs.lowered.includes(1003), 'the new renderer to be lowered');
  await readAgain(procs, 1000, 2);
  assert.deepEqual(procs.lowered.sort(), [1001, 1002, 1003], 'each once; never the browser');
  await a.close();
});

test('a request past its CPU budget has its whole lane paused while another request runs, never when alone, never the other lane, and always continued', async () => {
  const { l, procs } = restingLanes(2, 3, 5);
  const a = await l.lease('req');
  procs.trees.set(1000, [browser(1000, 50, 90_000), renderer(1001, 10, 1, 5_000)]);
  await until(() => procs.lowered.includes(1001), 'the busy renderer to be seen');
  await readAgain(procs, 1000, 2);
  assert.deepEqual(procs.pauses, [], 'alone, it runs');
  const b = await l.lease('req');
  // The other request works (its lane's browser uses CPU), so it is yielded to poll after poll.
  let bCpuMs = 0;
  const working = setInterval(() => procs.trees.set(2000, [browser(2000, 50, (bCpuMs += 10)), renderer(2001, 10)]), 1);
  await until(() => procs.pauses.includes(1001), 'the busy renderer to be stopped');
  await until(() => procs.pauses.includes(-1001), 'and continued');
  await until(() => procs.pauses.filter((p) => p === 1001).length >= 3, 'paused again, poll after poll');
  clearInterval(working);
  await a.close();
  assert.equal(procs.stopped.size, 0, 'nothing stays stopped once the request ends');
  const after = procs.pauses.length;
  // b's watch polls on (5 ms): two of its polls span a's run window (2 ms), had a left one behind.
  await readAgain(procs, 2000, 2);
  assert.equal(procs.pauses.length, after, 'no pause after the end');
  assert.ok(
    procs.pauses.every((p) => Math.abs(p) === 1000 || Math.abs(p) === 1001),
    'its lane only, never the other request',
  );
  await b.close();
});

test('the busy renderer is stopped as soon as another request starts, and continued as soon as it ends', async (t) => {
  // Polls an hour apart: only the other request's start and end can move it.
  const { l, procs } = restingLanes(2);
  const poll = handPolled(t);
  const a = await l.lease('req');
  busy(procs, 1000);
  poll();
  const b = await l.lease('req');
  assert.deepEqual([...procs.stopped], [1000, 1001], 'its lane is stopped when the other request took its lane');
  await b.close();
  assert.deepEqual([...procs.stopped], [], 'continued when it ended');
  assert.deepEqual(procs.pauses, [1000, 1001, -1000, -1001]);
  await a.close();
});

test('a pause in progress ends with the request: its processes are continued at once', async (t) => {
  const { l, procs } = restingLanes(2);
  const poll = handPolled(t);
  const a = await l.lease('req');
  busy(procs, 1000);
  poll();
  const b = await l.lease('req');
  assert.ok(procs.stopped.has(1001), 'the busy renderer is stopped');
  await a.close();
  assert.deepEqual([...procs.stopped], []);
  await b.close();
});

test('/proc: pause stops a real process and continues it', async () => {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    await new Promise((r) => child.once('spawn', r));
    const pid = child.pid as number;
    const state = (): string => {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2)[0] ?? '';
    };
    procfsSource().pause(pid, true);
    await until(() => state() === 'T', 'the process to be stopped');
    procfsSource().pause(pid, false);
    await until(() => state() !== 'T', 'the process to run again');
    procfsSource().pause(999_999_999, true); // gone: no throw
  } finally {
    child.kill('SIGKILL');
  }
});

test('/proc: deprioritize moves every thread of a process to the lowest priority', async (t) => {
  const { spawn } = await import('node:child_process');
  // Node has several threads (V8 platform workers, libuv): each must be moved, Linux keeps nice per thread.
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    await new Promise((r) => child.once('spawn', r));
    const pid = child.pid as number;
    const nices = (): number[] =>
      readdirSync(`/proc/${pid}/task`).map((tid) => {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
      });
    await until(() => nices().length > 1, 'the child to start its threads');
    // The child starts at this process's nice value (a test run under `nice -n 19` starts there already).
    const start = getPriority();
    if (start === BACKGROUND_NICE) return t.skip('this process already runs at the lowest priority');
    assert.ok(nices().every((n) => n === start));
    procfsSource().deprioritize(pid);
    assert.deepEqual([...new Set(nices())], [BACKGROUND_NICE]);
    procfsSource().deprioritize(999_999_999); // gone: no throw
  } finally {
    child.kill('SIGKILL');
  }
});

// Attacks on the CPU pause (H15). Polls an hour apart: only leases and releases move the pause.
test('two requests past their CPU budget are not left both stopped once the request they yielded to ends', async (t) => {
  const { l, procs } = restingLanes(3);
  const poll = handPolled(t);
  const a = await l.lease('a');
  const b = await l.lease('b');
  busy(procs, 1000);
  busy(procs, 2000);
  poll();
  const c = await l.lease('c');
  assert.deepEqual([...procs.stopped].sort(), [1000, 1001, 2000, 2001], 'both yield to the third request');
  await c.close();
  // Each is "contended" only by the other, which is stopped itself: the CPU would stand idle while both have work.
  assert.ok(
    !(procs.stopped.has(1001) && procs.stopped.has(2001)),
    `both busy renderers are stopped and nothing else runs: ${[...procs.stopped].join(',')}`,
  );
  await a.close();
  await b.close();
});

test('a request past its CPU budget is not kept stopped beside a request that uses no CPU (an idle lane-holder cannot slow it)', async () => {
  const { l, procs } = restingLanes(2, 3, 5);
  const reads = countReads(procs, 1000);
  const a = await l.lease('heavy');
  busy(procs, 1000);
  await until(() => procs.lowered.includes(1001), 'the heavy renderer to be seen past its budget');
  // The neighbour's processes never use any CPU (a script that only sleeps until its deadline).
  const b = await l.lease('idle');
  let from = reads();
  await until(() => reads() >= from + 10, 'ten polls with the idle neighbour');
  const seen = procs.pauses.length;
  from = reads();
  await until(() => reads() >= from + 10, 'ten more');
  assert.deepEqual(
    procs.pauses.slice(seen).filter((p) => p === 1001),
    [],
    'stopped poll after poll though the neighbour used no CPU at all',
  );
  await b.close();
  await a.close();
});

test('CPU the request makes its lane’s GPU process spend (compositing an animated page) counts against its budget and is paused too', async (t) => {
  // Measured (H15): an animated page of blurred layers made its lane's gpu-process use 2.6 s of CPU in 5 s while
  // its renderer used 0.18 s; nothing was lowered or stopped. Each lane's Chromium serves one request at a time.
  const gpu = (pid: number, cpuMs: number): ProcessMemory => ({
    pid,
    type: 'gpu-process',
    bytes: 10 * MB,
    start: 1,
    depth: 2,
    cpuMs,
  });
  const { l, procs } = lanes(2, 100, 3_000_000, HOUR_MS);
  const poll = handPolled(t);
  procs.trees.set(1000, [browser(1000, 50), gpu(1002, 100), renderer(1001, 10)]);
  procs.trees.set(2000, [browser(2000, 50), gpu(2002, 100), renderer(2001, 10)]);
  const a = await l.lease('animated');
  procs.trees.set(1000, [browser(1000, 50), gpu(1002, 5_100), renderer(1001, 10, 1, 180)]);
  poll();
  const b = await l.lease('innocent');
  assert.ok(procs.stopped.has(1002), 'the GPU process the animated page keeps busy is paused beside the innocent');
  // It serves the lane's next request, and a nice value cannot be lowered again: it is never moved to nice 19.
  assert.ok(!procs.lowered.includes(1002));
  await b.close();
  await a.close();
});

test('a request that spreads its CPU over fresh renderers (cross-site navigations, frames, popups) is held to one budget', async (t) => {
  // The budget is per process: each new renderer (a cross-site navigation swaps the process) starts at 0 ms.
  const { l, procs } = restingLanes(2);
  const poll = handPolled(t);
  const a = await l.lease('hostile');
  // Ten renderers made during the request, 200 ms each: 2 s of the request's CPU, none over 250 ms.
  procs.trees.set(1000, [
    browser(1000, 50),
    renderer(1001, 10),
    ...Array.from({ length: 10 }, (_, i) => renderer(1100 + i, 10, 1, 200)),
  ]);
  poll();
  const b = await l.lease('innocent');
  assert.ok(
    procs.lowered.length > 0 && procs.stopped.size > 0,
    `2 s of CPU over ten renderers: lowered ${procs.lowered.join(',') || 'none'}, stopped ${[...procs.stopped].join(',') || 'none'}`,
  );
  await b.close();
  await a.close();
});

test("a paused lane's DevTools messages are held with it, and let go whenever it runs again", async (t) => {
  // Polls an hour apart: only the other request's start and end move it.
  const { l, procs, hosts } = restingLanes(2);
  const poll = handPolled(t);
  const a = await l.lease('req');
  busy(procs, 1000);
  poll();
  const b = await l.lease('req');
  assert.ok(procs.stopped.has(1000), 'its lane is stopped');
  assert.deepEqual(hosts[0]?.held, [true], 'and its messages held');
  await b.close();
  assert.deepEqual(hosts[0]?.held, [true, false], 'both go on when the other request ends');
  const c = await l.lease('req');
  await a.close();
  assert.deepEqual(hosts[0]?.held, [true, false, true, false], 'and when its own request ends');
  assert.deepEqual(hosts[1]?.held, [], 'never the other lane');
  await c.close();
});

test('a request past its CPU budget yields while another lane makes the context its next request will get', async (t) => {
  const { l, procs, hosts } = restingLanes(2);
  const poll = handPolled(t);
  const a = await l.lease('req');
  busy(procs, 1000);
  poll();
  const other = hosts[1] as FakeHost & { spares: () => void };
  other.makingSpares = true;
  other.spares();
  assert.deepEqual([...procs.stopped], [1000, 1001], 'stopped as soon as the spare is begun');
  other.makingSpares = false;
  other.spares();
  assert.deepEqual([...procs.stopped], [], 'continued as soon as it is ready');
  // Its own lane's spares are not another's work (it has none while it serves a request, but say it had).
  (hosts[0] as FakeHost).makingSpares = true;
  hosts[0]?.spares();
  assert.deepEqual([...procs.stopped], [], 'not for its own lane');
  await a.close();
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

test("while its lane is paused, a request's whenRunning waits for the lane to run again", async (t) => {
  const { l, procs } = lanes(2, 100, 3_000_000, HOUR_MS);
  const poll = handPolled(t);
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 10)]);
  procs.trees.set(2000, [browser(2000, 50), renderer(2001, 10)]);
  const a = await l.lease('req');
  assert.equal(a.whenRunning(), undefined, 'running: nothing to wait for');
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 10, 1, 5_000)]);
  poll();
  const b = await l.lease('req');
  const waiting = a.whenRunning();
  assert.ok(waiting, 'paused: a promise');
  let ran = false;
  waiting.then(
    () => (ran = true),
    () => undefined,
  );
  await new Promise((r) => setImmediate(r));
  assert.equal(ran, false);
  await b.close();
  await new Promise((r) => setImmediate(r));
  assert.equal(ran, true, 'resolved when the other request ended');
  assert.equal(a.whenRunning(), undefined);
  await a.close();
});

test('a request past its CPU budget closes its context as heavy (a Chromium it left backed up is replaced); others not', async () => {
  const { l, procs, hosts } = lanes(1);
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 10)]);
  const light = await l.lease('req');
  await light.close();
  const heavy = await l.lease('req');
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 10, 1, 5_000)]);
  await until(() => procs.lowered.includes(1001), 'the budget to be passed');
  await heavy.close();
  assert.deepEqual(hosts[0]?.closes, [false, true]);
});

// A process that exits between two readings takes its CPU time out of /proc: not out of the request's budget,
// and not out of what its lane did since the last poll.
test('a request that does its work in renderers it lets exit (popups it closes, pages it leaves) is held to one budget', (t) => {
  const poll = handPolled(t);
  const procs = fakeProcs();
  const watchdog = new PageMemoryWatchdog({ limitBytes: 100 * MB, source: procs.source, pollMs: HOUR_MS });
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 10)]);
  const w = watchdog.watch(1000, () => undefined);
  try {
    // Ten renderers one after the other, 200 ms each, each gone before the next: 2 s of the request's CPU.
    for (let i = 0; i < 10 && !w.overBudget; i++) {
      procs.trees.set(1000, [browser(1000, 50), renderer(1001, 10), renderer(1100 + i, 10, 1, 200)]);
      poll();
    }
    assert.ok(w.overBudget, 'past its budget');
  } finally {
    w.stop();
  }
});

test('a lane whose renderer exits while its other processes work is still active (others yield to it)', (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'setTimeout'] });
  const procs = fakeProcs();
  const watchdog = new PageMemoryWatchdog({ limitBytes: 100 * MB, source: procs.source, pollMs: 100 });
  procs.trees.set(1000, [browser(1000, 50), renderer(1001, 10, 1, 0), renderer(1002, 10, 1, 900)]);
  const w = watchdog.watch(1000, () => undefined);
  try {
    t.mock.timers.tick(100);
    t.mock.timers.tick(100);
    assert.equal(w.active, false, 'control: a lane that used no CPU over a poll is idle');
    // The 900 ms renderer exits (a frame removed); the page's own renderer works 30 ms.
    procs.trees.set(1000, [browser(1000, 50), renderer(1001, 10, 1, 30)]);
    t.mock.timers.tick(100);
    assert.equal(w.active, true);
  } finally {
    w.stop();
  }
});

test("a request within its CPU budget is read at its own polls only, not again at each other request's lease and release", async () => {
  // Each reading walks the lane in /proc (~1.4 ms of CPU): at every lease, release and context made ahead beside it.
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
  const { l, hosts } = lanes(3, 100, 0, HOUR_MS, 1_000);
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
