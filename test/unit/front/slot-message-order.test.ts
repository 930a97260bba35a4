// A slot process speaks of its jobs in one order: phases forward, one answer,
// then `closed` (src/front/slots/slot-messages.ts). A message out of that
// order is one a compromised process forged: it throws, and the front kills
// the process for it (child-start.ts awaitReady), failing its own job alone.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { test } from 'node:test';
import { createLogger } from '../../../src/common/log.js';
import { onSlotMessage, type SlotMessageHooks } from '../../../src/front/slots/slot-messages.js';
import { SlotProcess, type Pending, type Slot } from '../../../src/front/slots/slot-process.js';
import type { FromSlot } from '../../../src/protocol/slot-wire.js';
import type { JobOutcome } from '../../../src/protocol/jobs.js';

const ok = { json: '"t"', logs: [], executionTimeMs: 1, timings: {} };

/** A slot process running job 7, and what reached its caller and the supervisor. */
function running(): { proc: SlotProcess; hooks: SlotMessageHooks; answers: JobOutcome[]; ended: () => number } {
  const slot: Slot = {
    index: 0,
    runAs: undefined,
    proc: undefined,
    busy: true,
    restartTimer: undefined,
    starting: false,
    idleTimer: undefined,
    retiredOnce: false,
  };
  const proc = new SlotProcess({ pid: 1 } as ChildProcess, undefined, 1, slot);
  const answers: JobOutcome[] = [];
  let closed = 0;
  let ended = 0;
  const job: Pending = {
    resolve: (o) => answers.push(o),
    closed: () => closed++,
    answered: false,
    reported: false,
    phase: 'lease',
    deadlineMs: 60_000,
    observed: new Set(),
  };
  proc.jobs.set(7, job);
  const hooks: SlotMessageHooks = {
    logger: createLogger('silent'),
    events: undefined,
    ready: () => undefined,
    jobEnded: () => ended++,
    stopping: () => false,
  };
  return { proc, hooks, answers, ended: () => ended + closed };
}

const say = (proc: SlotProcess, hooks: SlotMessageHooks, ...msgs: FromSlot[]): void => {
  for (const msg of msgs) onSlotMessage(proc, msg, hooks);
};

test('an honest job: navigation, script, its answer, then closed', () => {
  const { proc, hooks, answers, ended } = running();
  say(
    proc,
    hooks,
    { type: 'phase', id: 7, phase: 'navigation' },
    { type: 'phase', id: 7, phase: 'script' },
    { type: 'done', id: 7, outcome: ok },
    { type: 'closed', id: 7 },
  );
  assert.equal(answers.length, 1);
  assert.equal(answers[0]?.ok, true);
  assert.equal(proc.jobs.size, 0);
  assert.equal(ended(), 2, 'the job is closed and the supervisor told');
});

test('a job closed before it was answered (its caller never answered, its deadline disarmed): the process is bad', () => {
  const { proc, hooks, answers } = running();
  assert.throws(() => say(proc, hooks, { type: 'closed', id: 7 }), /before it answered/);
  assert.equal(proc.jobs.size, 1, 'the job stays, for the process exit to answer');
  assert.equal(answers.length, 0);
});

test('a phase stepped back to lease (its death then passing for the service’s own): the process is bad', () => {
  const { proc, hooks } = running();
  say(proc, hooks, { type: 'phase', id: 7, phase: 'script' });
  assert.throws(() => say(proc, hooks, { type: 'phase', id: 7, phase: 'lease' }), /back to lease/);
  assert.equal(proc.jobs.get(7)?.phase, 'script');
  assert.throws(() => say(proc, hooks, { type: 'phase', id: 7, phase: 'script' }), /back to script/);
  const fresh = running();
  assert.throws(() => say(fresh.proc, fresh.hooks, { type: 'phase', id: 7, phase: 'lease' }), /back to lease/);
});

test('a second answer, or a phase after the answer: the process is bad, the first answer stands', () => {
  const { proc, hooks, answers } = running();
  say(proc, hooks, { type: 'done', id: 7, outcome: ok });
  assert.throws(
    () => say(proc, hooks, { type: 'failed', id: 7, error: { code: 'SCRAPING_FAILED', message: 'x' } }),
    /had answered/,
  );
  assert.throws(() => say(proc, hooks, { type: 'phase', id: 7, phase: 'script' }), /had answered/);
  assert.equal(answers.length, 1);
  assert.equal(answers[0]?.ok, true);
});

test('a message about a job it was never given, or one it closed: the process is bad', () => {
  const { proc, hooks } = running();
  for (const msg of [
    { type: 'done', id: 8, outcome: ok },
    { type: 'failed', id: 8, error: { code: 'SCRAPING_FAILED', message: 'x' } },
    { type: 'phase', id: 8, phase: 'script' },
    { type: 'closed', id: 8 },
  ] as const)
    assert.throws(() => say(proc, hooks, msg), /does not run/);
  say(
    proc,
    hooks,
    { type: 'failed', id: 7, error: { code: 'SCRAPING_FAILED', message: 'x' } },
    { type: 'closed', id: 7 },
  );
  assert.throws(() => say(proc, hooks, { type: 'closed', id: 7 }), /does not run/);
});

test('an answer the front gave first (its deadline) leaves the process its own one answer', () => {
  const { proc, hooks, answers } = running();
  const job = proc.jobs.get(7);
  assert.ok(job);
  job.answered = true;
  say(
    proc,
    hooks,
    { type: 'failed', id: 7, error: { code: 'SCRAPING_FAILED', message: 'late' } },
    { type: 'closed', id: 7 },
  );
  assert.equal(answers.length, 0, 'the caller had the front’s answer');
  assert.equal(proc.jobs.size, 0);
});

test('a failure as the service’s own preparation once the page is reached (retried, charged to no key): the process is bad', () => {
  const housekeeping = { code: 'SERVICE_UNAVAILABLE', message: 'x', housekeeping: 'lease' } as const;
  const leasing = running();
  say(leasing.proc, leasing.hooks, { type: 'failed', id: 7, error: housekeeping });
  assert.equal(leasing.answers[0]?.ok, false, 'in lease it is the service’s own');
  const { proc, hooks, answers } = running();
  say(proc, hooks, { type: 'phase', id: 7, phase: 'navigation' });
  assert.throws(() => say(proc, hooks, { type: 'failed', id: 7, error: housekeeping }), /own preparation/);
  assert.equal(answers.length, 0);
});

test('a failure is placed in the phase the process said it reached, not the one its answer claims', () => {
  const { proc, hooks, answers } = running();
  say(
    proc,
    hooks,
    { type: 'phase', id: 7, phase: 'navigation' },
    { type: 'failed', id: 7, error: { code: 'INTERNAL_SERVER_ERROR', message: 'x', phase: 'lease' } },
  );
  assert.equal(answers[0]?.telemetry.phase, 'navigation');
});

test('a duration with no job running, twice for one job, or past the job’s deadline (metrics made +Inf): the process is bad', () => {
  const seen: number[] = [];
  const { proc, hooks } = running();
  const counting = { ...hooks, events: { observe: (_m: 'navigation' | 'script', s: number) => void seen.push(s) } };
  say(proc, counting, { type: 'observe', metric: 'navigation', seconds: 1.5 });
  assert.throws(() => say(proc, counting, { type: 'observe', metric: 'navigation', seconds: 1 }), /twice/);
  assert.throws(() => say(proc, counting, { type: 'observe', metric: 'script', seconds: 1e308 }), /past its job/);
  say(proc, counting, { type: 'done', id: 7, outcome: ok });
  assert.throws(() => say(proc, counting, { type: 'observe', metric: 'script', seconds: 1 }), /no job running/);
  assert.deepEqual(seen, [1.5]);
});
