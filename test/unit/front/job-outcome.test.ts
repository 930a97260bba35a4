// A job's outcome is a value: its error is made whole and never changed, and
// what the job measured travels beside it, each step adding to a new outcome
// (src/protocol/jobs.ts, src/front/child-guard/wire-error.ts, slot-process.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError, notPrepared } from '../../../src/common/errors.js';
import { answer, type Pending } from '../../../src/front/slots/slot-process.js';
import { fromWire } from '../../../src/front/child-guard/wire-error.js';
import { failedJob, fromWireResult, toWireResult, withTelemetry, type JobOutcome } from '../../../src/protocol/jobs.js';

test('a success crosses the wire and back as the same result and telemetry', () => {
  const result = { json: '"t"', logs: ['a'], executionTimeMs: 12 };
  const telemetry = { timings: { lease: 1, navigation: 3 }, egress: { bytesReceived: 5 }, usage: { cpuMs: 7 } };
  assert.deepEqual(fromWireResult(toWireResult(result, telemetry)), { ok: true, result, telemetry });
});

test("a failed message is the caller's error and, beside it, what the job measured", () => {
  const o = fromWire({
    code: 'SCRAPING_FAILED',
    message: 'Script execution failed: no',
    logs: ['x'],
    timeout: 'script',
    failure: { phase: 'script', line: 2 },
    timings: { script: 40 },
    usage: { isolateHeapPeakMb: 3 },
    egress: { bytesSent: 9 },
    phase: 'script',
  });
  assert.equal(o.ok, false);
  if (o.ok) return;
  assert.deepEqual(
    [o.error.code, o.error.logs, o.error.timeout, o.error.failure],
    ['SCRAPING_FAILED', ['x'], 'script', { phase: 'script', line: 2 }],
  );
  assert.deepEqual(o.telemetry, {
    timings: { script: 40 },
    usage: { isolateHeapPeakMb: 3 },
    egress: { bytesSent: 9 },
    phase: 'script',
  });
  assert.equal('usage' in o.error || 'timings' in o.error || 'phase' in o.error, false);
});

test('more telemetry makes a new outcome; the one before is unchanged', () => {
  const before = failedJob(new ApiError('SCRAPING_FAILED'), { phase: 'navigation' });
  const after = withTelemetry(before, { slot: 2 });
  assert.deepEqual(before.telemetry, { phase: 'navigation' });
  assert.deepEqual(after.telemetry, { phase: 'navigation', slot: 2 });
  assert.equal(after.ok ? undefined : after.error, before.error);
});

test('an error with logs added is a new error; the thrown one is unchanged', () => {
  const thrown = new ApiError('SCRAPING_FAILED', 'Script execution failed: x', { timeout: 'script' });
  const told = thrown.with({ logs: ['line'] });
  assert.equal(thrown.logs, undefined);
  assert.deepEqual(
    [told.code, told.message, told.timeout, told.logs],
    ['SCRAPING_FAILED', 'Script execution failed: x', 'script', ['line']],
  );
  assert.equal(told.stack, thrown.stack);
});

function pending(phase: Pending['phase']): { job: Pending; got: () => JobOutcome | undefined } {
  let got: JobOutcome | undefined;
  const job: Pending = {
    resolve: (o) => (got = o),
    closed: () => undefined,
    answered: false,
    reported: false,
    phase,
    deadlineMs: 60_000,
    observed: new Set(),
  };
  return { job, got: () => got };
}

test("a failure the front answers itself is placed in the job's last phase; the slot's own phase stays", () => {
  const front = pending('script');
  answer(front.job, new ApiError('INTERNAL_SERVER_ERROR'));
  assert.equal(front.got()?.telemetry.phase, 'script');
  // Once answered, a later answer is not taken.
  const first = front.got();
  answer(front.job, notPrepared('lease'));
  assert.equal(front.got(), first);

  const slot = pending('script');
  answer(slot.job, failedJob(notPrepared('isolate'), { phase: 'lease' }));
  assert.equal(slot.got()?.telemetry.phase, 'lease');
});
