// What the front takes from an executor (checkFromExecutor in src/ipc.ts): each
// field of a job's outcome or error is checked for its kind and values, because
// each ends up somewhere that trusts it: `timeout` is a metric label value,
// `egress` becomes metric increments and a log line, `failure` and `logs` reach
// the caller's error body. An executor that escaped our code could send anything;
// a message that fails the check gets the executor killed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkFromExecutor } from '../../src/ipc.js';

const error = { code: 'SCRAPING_FAILED', message: 'Scraping failed: net::ERR_FAILED' };
const failed = (extra: Record<string, unknown>): unknown => ({ type: 'failed', id: 1, error: { ...error, ...extra } });
const outcome = { json: '1', logs: ['a'], executionTimeMs: 3, timings: { lease: 1, navigation: 2, script: 0.5 } };
const done = (extra: Record<string, unknown>): unknown => ({ type: 'done', id: 1, outcome: { ...outcome, ...extra } });

test('a well-formed failed and done, with every optional field, are read', () => {
  const full = failed({
    logs: ['x'],
    timeout: 'script',
    detail: 'why',
    egress: { connections: 2, refused: 0, bytesSent: 10, bytesReceived: 20, proxyAuthRefused: 1 },
    failure: {
      phase: 'script',
      finalUrl: 'http://a.test/',
      line: 3,
      column: 7,
      stack: 'Error: x\n    at <script>:3:7',
      pageCalls: [{ method: 'page.click', durationMs: 5, outcome: 'error', error: 'TimeoutError: ...' }],
      screenshotOmitted: 'too large',
    },
  });
  assert.deepEqual(checkFromExecutor(full), full);
  assert.deepEqual(checkFromExecutor(done({ egress: { connections: 1 } })), done({ egress: { connections: 1 } }));
});

test('a forged failed whose timeout is any string is refused (it would be a new pagescript_timeouts_total label)', () => {
  for (const timeout of ['phase-0001', '', 'Script', 42, null])
    assert.throws(
      () => checkFromExecutor(failed({ timeout })),
      /failed message the front cannot read/,
      String(timeout),
    );
});

test('a forged egress count that is null, negative, a string or an unknown key is refused, in failed and in done', () => {
  for (const egress of [
    null,
    [],
    'a lot',
    { bytesSent: -1 },
    { bytesSent: '10' },
    { bytesSent: 1.5 },
    { bytesSent: Infinity },
    { anyLabel: 1 },
  ]) {
    assert.throws(() => checkFromExecutor(failed({ egress })), /cannot read/, JSON.stringify(egress));
    assert.throws(() => checkFromExecutor(done({ egress })), /cannot read/, JSON.stringify(egress));
  }
});

test("a forged failure or logs of the wrong kind is refused (they reach the caller's error body)", () => {
  for (const failure of [
    null,
    'x',
    { phase: 'boot' },
    { finalUrl: 1 },
    { line: '3' },
    { pageCalls: 'all' },
    { pageCalls: [{ method: 1, durationMs: 1, outcome: 'ok' }] },
    { pageCalls: [{ method: 'page.click', durationMs: 1, outcome: 'maybe' }] },
    { pageCalls: Array.from({ length: 100 }, () => ({ method: 'page.click', durationMs: 1, outcome: 'ok' })) },
    { screenshot: {} },
  ])
    assert.throws(() => checkFromExecutor(failed({ failure })), /cannot read/, JSON.stringify(failure));
  for (const logs of [null, 'x', [1], [{}]]) {
    assert.throws(() => checkFromExecutor(failed({ logs })), /cannot read/, JSON.stringify(logs));
    assert.throws(() => checkFromExecutor(done({ logs })), /cannot read/, JSON.stringify(logs));
  }
  assert.throws(() => checkFromExecutor(failed({ detail: 7 })), /cannot read/);
  assert.throws(() => checkFromExecutor(done({ timings: { lease: -1 } })), /cannot read/);
  assert.throws(() => checkFromExecutor(done({ timings: { other: 1 } })), /cannot read/);
});
