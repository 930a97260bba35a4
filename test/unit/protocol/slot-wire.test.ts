// What the front takes from a slot process: every field it reads is checked
// before it is believed (src/protocol/messages.ts checkFromSlot). A slot process runs
// hostile scripts and pages; one that escaped its isolate could send any
// message, and the front must neither end nor grow from it. The e2e test
// (test/e2e/front/slot-wire.test.ts) shows a refused message kills only that
// slot process; these show which messages are refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkFromSlot } from '../../../src/protocol/slot-wire.js';
import { HOUSEKEEPING_CAUSES, INTERNAL_CAUSES } from '../../../src/common/errors.js';

const OUTCOME = { logs: ['a'], executionTimeMs: 12, timings: { lease: 1.5, navigation: 30 } };
const ERROR = { code: 'SCRAPING_FAILED', message: 'Script execution failed: no' };

const done = (outcome: Record<string, unknown>): unknown => ({
  type: 'done',
  id: 1,
  outcome: { ...OUTCOME, ...outcome },
});
const failed = (error: Record<string, unknown>): unknown => ({ type: 'failed', id: 1, error: { ...ERROR, ...error } });

test('well-formed outcomes and failures are taken, with every optional field', () => {
  checkFromSlot(done({}));
  checkFromSlot(done({ json: '1', egress: { bytesSent: 10, refused: 0 } }));
  checkFromSlot(failed({}));
  checkFromSlot(
    failed({
      logs: ['x'],
      timeout: 'script',
      detail: 'stack',
      egress: { bytesReceived: 3 },
      timings: { lease: 2, isolate: 1, navigation: 40, script: 5 },
      failure: {
        phase: 'script',
        finalUrl: 'http://127.0.0.1/',
        line: 1,
        column: 7,
        stack: 'Error: no',
        pageCalls: [
          { method: 'title', durationMs: 2, outcome: 'ok' },
          { method: 'click', durationMs: 9, outcome: 'error', error: 'x' },
        ],
        screenshotOmitted: 'too large',
      },
    }),
  );
});

test('a failure whose timeout is not one of the two phases is refused (it would become a metric label)', () => {
  assert.throws(() => checkFromSlot(failed({ timeout: 'phase-0001' })), /failed message the front cannot read/);
  assert.throws(() => checkFromSlot(failed({ timeout: 1 })));
});

test('a failure whose internal cause, housekeeping step or phase is not of its closed set is refused (metric labels)', () => {
  for (const internal of INTERNAL_CAUSES)
    assert.doesNotThrow(() => checkFromSlot(failed({ code: 'INTERNAL_SERVER_ERROR', internal, phase: 'script' })));
  for (const housekeeping of HOUSEKEEPING_CAUSES)
    assert.doesNotThrow(() => checkFromSlot(failed({ code: 'SERVICE_UNAVAILABLE', housekeeping, phase: 'lease' })));
  assert.throws(() => checkFromSlot(failed({ internal: 'cause-0001' })), /failed message the front cannot read/);
  assert.throws(() => checkFromSlot(failed({ housekeeping: 'step-0001' })));
  assert.throws(() => checkFromSlot(failed({ phase: 'phase-0001' })));
  assert.throws(() => checkFromSlot(failed({ internal: 1 })));
  for (const phase of ['lease', 'navigation', 'script']) checkFromSlot({ type: 'phase', id: 1, phase });
  assert.throws(() => checkFromSlot({ type: 'phase', id: 1, phase: 'phase-0001' }));
  assert.throws(() => checkFromSlot({ type: 'phase', id: -1, phase: 'script' }));
});

test('egress figures that are not counts are refused, in a failure and in an outcome', () => {
  assert.throws(() => checkFromSlot(failed({ egress: null })));
  assert.throws(() => checkFromSlot(failed({ egress: { bytesSent: -1 } })));
  assert.throws(() => checkFromSlot(done({ egress: { bytesSent: '1' } })));
  assert.throws(() => checkFromSlot(done({ egress: [1, 2] })));
  const wide = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`f${i}`, 1]));
  assert.throws(() => checkFromSlot(done({ egress: wide })), 'a summary of 65 fields is not one');
});

test('failure details of the wrong kinds are refused (they are copied into the reply)', () => {
  for (const failure of [
    null,
    'x',
    { phase: 'reply' },
    { finalUrl: {} },
    { line: -1 },
    { column: 1.5 },
    { stack: ['x'] },
    { pageCalls: {} },
    { pageCalls: [{ method: 'x', durationMs: 1, outcome: 'maybe' }] },
    { pageCalls: [{ method: 1, durationMs: 1, outcome: 'ok' }] },
    { screenshot: 1 },
    { screenshotOmitted: null },
  ])
    assert.throws(() => checkFromSlot(failed({ failure })), JSON.stringify(failure));
});

test('logs, detail and timings of the wrong kinds are refused', () => {
  assert.throws(() => checkFromSlot(failed({ logs: 'x' })));
  assert.throws(() => checkFromSlot(failed({ logs: [1] })));
  assert.throws(() => checkFromSlot(failed({ detail: {} })));
  assert.throws(() => checkFromSlot(failed({ timings: { lease: -1 } })));
  assert.throws(() => checkFromSlot(failed({ timings: { script: Number.POSITIVE_INFINITY } })));
  assert.throws(() => checkFromSlot(done({ timings: { navigation: '3' } })));
  assert.throws(() => checkFromSlot(done({ timings: null })));
  assert.throws(() => checkFromSlot(done({ json: 1 })));
});

test('failure details, page calls and timings with a field the front does not check are refused (copied whole into the reply)', () => {
  assert.throws(() => checkFromSlot(failed({ failure: { phase: 'script', extra: 10n } })));
  const cycle: Record<string, unknown> = { phase: 'script' };
  cycle.self = cycle;
  assert.throws(() => checkFromSlot(failed({ failure: cycle })));
  assert.throws(() =>
    checkFromSlot(failed({ failure: { pageCalls: [{ method: 'title', durationMs: 1, outcome: 'ok', x: 1n }] } })),
  );
  assert.throws(() => checkFromSlot(done({ timings: { lease: 1, 'a\r\nSet-Cookie: x': 1 } })));
  assert.throws(() => checkFromSlot(failed({ timings: { serialize: 1 } })));
});

/** An array of `length` holes but one: structured clone sends it in a few bytes, and it is built sparse (no store of holes). */
function sparse(length: number, item: unknown): unknown[] {
  const a: unknown[] = [];
  a[length - 1] = item;
  return a;
}

test('lists with holes or past any length a slot process sends are refused, before the front walks them', () => {
  assert.throws(() => checkFromSlot(done({ logs: sparse(2, 'a') })), 'a hole is not a log line');
  assert.throws(() => checkFromSlot(done({ logs: sparse(10_000_000, 'a') })), 'ten million log lines');
  assert.throws(() => checkFromSlot(failed({ logs: sparse(10_000_000, 'a') })));
  assert.throws(() =>
    checkFromSlot(
      failed({ failure: { pageCalls: sparse(10_000_000, { method: 'x', durationMs: 1, outcome: 'ok' }) } }),
    ),
  );
  const status = { ready: true, restarts: 0, recycles: 0, contextsReady: 0 };
  checkFromSlot({ type: 'status', browser: { ...status, pids: [12, 13] } });
  // Read again by /health (flatMap) and by the continue of a dead slot process's stopped processes.
  assert.throws(() => checkFromSlot({ type: 'status', browser: { ...status, pids: sparse(10_000_000, 12) } }));
});
