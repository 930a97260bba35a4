// The CPU pause between slots: which slots the front tells to yield, and why a
// slot process's claim alone is not enough (src/front/children/cpu-share.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CpuShare,
  LOW_WEIGHT_AFTER_CPU_MS,
  LOW_WEIGHT_CARRY_MS,
  MAX_CLAIMS_PER_S,
  MAX_YIELDED_TO_CPU_MS,
} from '../../src/front/children/cpu-share.js';

/** A CpuShare with its tells recorded and each slot process's CPU set by the test. */
function share(): { s: CpuShare; told: Map<number, boolean[]>; cpu: Map<number, number> } {
  const told = new Map<number, boolean[]>();
  const cpu = new Map<number, number>();
  const s = new CpuShare({
    tell: (slot, running) => told.set(slot, [...(told.get(slot) ?? []), running]),
    cpuMs: (pid) => cpu.get(pid),
    checkEveryMs: 0,
  });
  return { s, told, cpu };
}

test('a heavy request is told to yield while a working request runs in another slot, and not after', () => {
  const { s, told, cpu } = share();
  cpu.set(100, 0);
  cpu.set(200, 0);
  assert.equal(s.jobStarted(0, 100, 0), undefined, "no group to count: the tree's count is used (slot-job.ts)");
  s.jobStarted(1, 200, 0);
  s.said(0, { worthy: false, heavy: true });
  s.said(1, { worthy: true, heavy: false });
  assert.equal(s.othersRunning(0), true);
  assert.equal(s.othersRunning(1), false);
  // The working one uses the CPU, as the kernel counts it.
  cpu.set(200, 50);
  s.check();
  cpu.set(200, 80);
  s.check();
  assert.equal(s.othersRunning(0), true);
  s.jobEnded(1, 200);
  assert.equal(s.othersRunning(0), false);
  assert.deepEqual(told.get(0), [false, true, false], 'alone, beside the working one, alone again');
});

test('a slot that claims to be working while its tree uses no CPU is not yielded to', () => {
  const { s, cpu } = share();
  cpu.set(100, 0);
  cpu.set(200, 30);
  s.jobStarted(0, 100, 0);
  s.jobStarted(1, 200, 30);
  s.said(0, { worthy: false, heavy: true });
  s.said(1, { worthy: true, heavy: false });
  s.check();
  assert.equal(s.othersRunning(0), true, 'a new request is yielded to until it shows idle');
  // Not one clock tick since the last check: its claim is not believed.
  s.check();
  assert.equal(s.othersRunning(0), false);
  cpu.set(200, 40);
  s.check();
  assert.equal(s.othersRunning(0), true, 'believed again once it works');
});

test('a slot that claims to be within its budget past MAX_YIELDED_TO_CPU_MS of the kernel’s count is not yielded to', () => {
  const { s, cpu } = share();
  cpu.set(100, 0);
  cpu.set(200, 1000);
  s.jobStarted(0, 100, 0);
  s.jobStarted(1, 200, 1000);
  s.said(0, { worthy: false, heavy: true });
  s.said(1, { worthy: true, heavy: false });
  cpu.set(200, 1000 + MAX_YIELDED_TO_CPU_MS - 10);
  s.check();
  assert.equal(s.othersRunning(0), true);
  cpu.set(200, 1000 + MAX_YIELDED_TO_CPU_MS + 10);
  s.check();
  assert.equal(s.othersRunning(0), false);
});

test('a claim from a slot the front runs no job in is ignored, and a gone process is not yielded to', () => {
  const { s, cpu } = share();
  cpu.set(100, 0);
  s.jobStarted(0, 100, 0);
  s.said(0, { worthy: false, heavy: true });
  // Slot 1 has no job: what its process says is not read.
  s.said(1, { worthy: true, heavy: false });
  assert.equal(s.othersRunning(0), false);
  s.jobStarted(1, 200, 0);
  s.check();
  assert.equal(s.othersRunning(0), false, 'its process is gone (no CPU count)');
});

test('each busy slot is told on change only, and told again when its next job starts', () => {
  const { s, told, cpu } = share();
  cpu.set(100, 0);
  cpu.set(200, 0);
  s.jobStarted(0, 100, 0);
  assert.deepEqual(told.get(0), [false]);
  s.jobStarted(1, 200, 0);
  assert.deepEqual(told.get(0), [false, true]);
  assert.deepEqual(told.get(1), [true]);
  s.said(1, { worthy: true, heavy: false });
  assert.deepEqual(told.get(0), [false, true], 'no change, no message');
  s.jobEnded(0, 100);
  s.jobStarted(0, 100, 0);
  assert.deepEqual(told.get(0), [false, true, true], 'a new job is told where it stands');
});

test("the end of a killed process's job does not end the job its slot's next process took", () => {
  const { s, cpu } = share();
  cpu.set(100, 0);
  cpu.set(300, 0);
  s.jobStarted(0, 100, 0);
  s.said(0, { worthy: false, heavy: true });
  // Slot 1's process 200 was killed; its replacement 300 took a job before 200's end was seen.
  s.jobStarted(1, 300, 0);
  s.jobEnded(1, 200);
  assert.equal(s.othersRunning(0), true);
  s.jobEnded(1, 300);
  assert.equal(s.othersRunning(0), false);
});

/** A CpuShare whose slots have CPU cgroups: the weights it gives are recorded. */
function weighed(clock = { ms: 0 }): { s: CpuShare; cpu: Map<number, number>; weights: [number, boolean][] } {
  const cpu = new Map<number, number>();
  const weights: [number, boolean][] = [];
  const s = new CpuShare({
    tell: () => undefined,
    cpuMs: (pid) => cpu.get(pid),
    weigh: (slot, low) => void weights.push([slot, low]),
    checkEveryMs: 0,
    now: () => clock.ms,
  });
  return { s, cpu, weights };
}

test('a key whose job ended at the low weight starts its next jobs low for LOW_WEIGHT_CARRY_MS; other keys do not', () => {
  const clock = { ms: 0 };
  const { s, cpu, weights } = weighed(clock);
  cpu.set(100, 0);
  s.jobStarted(0, 100, 0, 'flooder');
  cpu.set(100, LOW_WEIGHT_AFTER_CPU_MS);
  s.check();
  s.jobEnded(0, 100);
  assert.deepEqual(weights, [
    [0, true],
    [0, false],
  ]);
  weights.length = 0;
  // The same key, back to back, in another slot: low from its start.
  clock.ms += LOW_WEIGHT_CARRY_MS - 1;
  cpu.set(200, 0);
  s.jobStarted(1, 200, 0, 'flooder');
  assert.deepEqual(weights, [[1, true]]);
  // Another key in the first slot: its own weight.
  cpu.set(101, 0);
  s.jobStarted(0, 101, 0, 'innocent');
  assert.deepEqual(weights, [[1, true]]);
  s.jobEnded(0, 101);
  // The carried job used its own share too: its key carries the low weight again from its end.
  cpu.set(200, LOW_WEIGHT_AFTER_CPU_MS);
  s.jobEnded(1, 200);
  clock.ms += LOW_WEIGHT_CARRY_MS;
  weights.length = 0;
  cpu.set(201, 0);
  s.jobStarted(1, 201, 0, 'flooder');
  assert.deepEqual(weights, [[1, true]], 'still within the carry of its last low job');
  // A light job (under the threshold) does not carry it on.
  s.jobEnded(1, 201);
  // Past the carry of the last heavy job: the full weight again.
  clock.ms += 1;
  weights.length = 0;
  cpu.set(202, 0);
  s.jobStarted(1, 202, 0, 'flooder');
  assert.deepEqual(weights, []);
});

test('a key with a job running at the low weight starts its other jobs low; another key does not', () => {
  const { s, cpu, weights } = weighed();
  cpu.set(100, 0);
  s.jobStarted(0, 100, 0, 'flooder');
  cpu.set(100, LOW_WEIGHT_AFTER_CPU_MS);
  s.check();
  assert.deepEqual(weights, [[0, true]]);
  cpu.set(200, 0);
  s.jobStarted(1, 200, 0, 'flooder');
  assert.deepEqual(weights, [
    [0, true],
    [1, true],
  ]);
  s.jobEnded(1, 200);
  weights.length = 0;
  cpu.set(201, 0);
  s.jobStarted(1, 201, 0, 'innocent');
  assert.deepEqual(weights, [], 'another key keeps its own weight');
});

test('a job past LOW_WEIGHT_AFTER_CPU_MS of its tree’s CPU gets the low weight until it ends', () => {
  const { s, cpu, weights } = weighed();
  cpu.set(100, 500);
  s.jobStarted(0, 100, 500);
  cpu.set(100, 500 + LOW_WEIGHT_AFTER_CPU_MS - 1);
  s.check();
  assert.deepEqual(weights, [], 'under it: its own weight');
  cpu.set(100, 500 + LOW_WEIGHT_AFTER_CPU_MS);
  s.check();
  s.check();
  assert.deepEqual(weights, [[0, true]], 'once, past it');
  s.jobEnded(0, 100);
  assert.deepEqual(
    weights,
    [
      [0, true],
      [0, false],
    ],
    'its weight back when it ends',
  );
  // The next job in the slot starts at the default weight and is counted from its own start.
  cpu.set(101, 9000);
  s.jobStarted(0, 101, 9000);
  s.check();
  assert.deepEqual(weights, [
    [0, true],
    [0, false],
  ]);
});

test('a heavy job is weighed as soon as a request starts in another slot, not at the next check', () => {
  const { s, cpu, weights } = weighed();
  cpu.set(100, 0);
  s.jobStarted(0, 100, 0);
  // Its CPU grows while it runs alone: nothing reads it (the timer runs only while two jobs do).
  cpu.set(100, 3000);
  assert.deepEqual(weights, []);
  cpu.set(200, 0);
  s.jobStarted(1, 200, 0);
  assert.deepEqual(weights, [[0, true]], 'the heavy one, at the fresh one’s start');
});

test('a job whose process is gone keeps its weight until it ends, and then gets it back', () => {
  const { s, cpu, weights } = weighed();
  cpu.set(100, 0);
  s.jobStarted(0, 100, 0);
  cpu.set(100, 2000);
  s.check();
  cpu.delete(100);
  s.check();
  // A killed process's job ending after the slot's next process took a job changes nothing.
  cpu.set(300, 0);
  s.jobEnded(0, 999);
  assert.deepEqual(weights, [[0, true]]);
  s.jobEnded(0, 100);
  assert.deepEqual(weights, [
    [0, true],
    [0, false],
  ]);
});

test('a job whose end was never reported leaves no low weight to the next job of its slot', () => {
  const { s, cpu, weights } = weighed();
  cpu.set(100, 0);
  s.jobStarted(0, 100, 0);
  cpu.set(100, 2000);
  s.check();
  cpu.set(101, 0);
  s.jobStarted(0, 101, 0);
  assert.deepEqual(weights, [
    [0, true],
    [0, false],
  ]);
});

test('a job whose slot’s group holds a process outside its tree (a double fork’s orphan) has it killed and gets the low weight', () => {
  const cpu = new Map<number, number>();
  const weights: [number, boolean][] = [];
  /** Processes outside each slot's tree, as CpuGroups.sweep would find them; sweeps recorded. */
  const strays = new Map<number, number>();
  const swept: number[] = [];
  const s = new CpuShare({
    tell: () => undefined,
    cpuMs: (pid) => cpu.get(pid),
    weigh: (slot, low) => void weights.push([slot, low]),
    sweep: (slot) => {
      swept.push(slot);
      const n = strays.get(slot) ?? 0;
      strays.delete(slot);
      return n;
    },
    checkEveryMs: 0,
  });
  // What an earlier job left is killed at the next job's start, and is not that job's fault.
  strays.set(0, 1);
  cpu.set(100, 0);
  s.jobStarted(0, 100, 0);
  assert.deepEqual(swept, [0]);
  assert.deepEqual(weights, []);
  // Its tree uses no CPU; its orphan spins uncounted: found at the next check, or when another job starts.
  strays.set(0, 1);
  s.check();
  assert.deepEqual(weights, [[0, true]]);
  strays.set(0, 1);
  cpu.set(200, 0);
  s.jobStarted(1, 200, 0);
  assert.deepEqual(weights, [[0, true]], 'lowered once');
  swept.length = 0;
  s.jobEnded(0, 100);
  assert.deepEqual(swept, [0], 'what the job left is killed when it ends');
  assert.deepEqual(weights, [
    [0, true],
    [0, false],
  ]);
});

test('a job is weighed by its slot group’s count when there is one: CPU of children nobody in its tree reaped counts', () => {
  const cpu = new Map<number, number>();
  const group = new Map<number, number>();
  const weights: [number, boolean][] = [];
  const s = new CpuShare({
    tell: () => undefined,
    cpuMs: (pid) => cpu.get(pid),
    weigh: (slot, low) => void weights.push([slot, low]),
    usageMs: (slot) => group.get(slot),
    checkEveryMs: 0,
  });
  cpu.set(100, 50);
  group.set(0, 7000);
  assert.equal(s.jobStarted(0, 100, 50), 7000, 'the count the job is billed from (slot-job.ts)');
  // A process ignoring SIGCHLD spins in children the kernel reaps: its tree's count stays; its group's grows.
  group.set(0, 7000 + LOW_WEIGHT_AFTER_CPU_MS);
  s.check();
  assert.deepEqual(weights, [[0, true]]);
  s.jobEnded(0, 100);
  // The next job is counted from its own start: what its group used before is not its.
  cpu.set(101, 0);
  assert.equal(s.jobStarted(0, 101, 0), 7000 + LOW_WEIGHT_AFTER_CPU_MS);
  s.check();
  assert.deepEqual(weights, [
    [0, true],
    [0, false],
  ]);
});

test('a slot that toggles its claim as fast as it can is not yielded to past MAX_CLAIMS_PER_S a second: the others are told a bounded number of times (400,000 tells in 4.5 s)', () => {
  let now = 0;
  const told = new Map<number, boolean[]>();
  const s = new CpuShare({
    tell: (slot, running) => told.set(slot, [...(told.get(slot) ?? []), running]),
    cpuMs: () => 0,
    checkEveryMs: 0,
    now: () => now,
  });
  s.jobStarted(0, 100, 0);
  s.jobStarted(1, 200, 0);
  s.said(0, { worthy: false, heavy: true });
  for (let i = 0; i < 10_000; i++) s.said(1, { worthy: i % 2 === 0, heavy: false });
  const tells = told.get(0)?.length ?? 0;
  assert.ok(tells <= MAX_CLAIMS_PER_S + 2, `slot 0 was told ${tells} times`);
  assert.equal(s.othersRunning(0), false, 'the toggling slot is not yielded to for the rest of the second');
  // The next second, its claims count again.
  now += 1000;
  s.said(1, { worthy: true, heavy: false });
  assert.equal(s.othersRunning(0), true);
});
