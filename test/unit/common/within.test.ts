// within(): the one deadline wrapper of the processes (Chromium's start and close, the clipboard's emptying,
// the URL check, page reads, a DNS lookup).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { within } from '../../../src/common/within.js';

test('the work settles first: its value, and its rejection as it is', async () => {
  assert.equal(await within(Promise.resolve(7), 1_000, () => 'late'), 7);
  await assert.rejects(
    within(Promise.reject(new Error('broke')), 1_000, () => 'late'),
    /broke/,
  );
});

test('the deadline comes first: what late() returns, or what it throws', async () => {
  const never = new Promise<number>(() => undefined);
  assert.equal(await within(never, 10, () => 'late'), 'late');
  await assert.rejects(
    within(never, 10, () => {
      throw new Error('not in time');
    }),
    /not in time/,
  );
});

test('a work that rejects after its deadline leaves no unhandled rejection', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown): void => void unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  try {
    const slow = new Promise<number>((_, reject) => setTimeout(() => reject(new Error('too late')), 30));
    assert.equal(await within(slow, 5, () => 0), 0);
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});

test('late() is not called when the work settles in time (its timer is cleared)', async () => {
  let called = false;
  await within(Promise.resolve(1), 20, () => (called = true));
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.equal(called, false);
});
