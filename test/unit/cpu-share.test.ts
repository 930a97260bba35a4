// The CPU pause between slots: which slots the front tells to yield, and why a
// slot process's claim alone is not enough (src/front/children/cpu-share.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuShare, MAX_YIELDED_TO_CPU_MS } from '../../src/front/children/cpu-share.js';

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
  s.jobStarted(0, 100, 0);
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
