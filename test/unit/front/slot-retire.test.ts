// When a slot process is retired (src/front/slots/slot-process.ts retireAfter):
// after SLOT_RECYCLE_REQUESTS requests, the first process of each slot earlier by
// its share, so that the slots' replacements do not all fall together.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retireAfter } from '../../../src/front/slots/slot-process.js';

test('0 is never', () => {
  for (const i of [0, 1, 3]) assert.equal(retireAfter(0, i, 4, false), 0);
});

test("the slots' first processes retire spread over one period; every later one after the whole of it", () => {
  assert.deepEqual(
    [0, 1, 2, 3].map((i) => retireAfter(1000, i, 4, false)),
    [1000, 750, 500, 250],
  );
  for (const i of [0, 1, 2, 3]) assert.equal(retireAfter(1000, i, 4, true), 1000);
  // Two slots at the default: the second's first process after 500 requests, then both every 1000, 500 apart.
  assert.deepEqual([retireAfter(1000, 0, 2, false), retireAfter(1000, 1, 2, false)], [1000, 500]);
});

test('a process serves at least one request, however small the setting', () => {
  for (const i of [0, 1, 2, 3]) assert.ok(retireAfter(1, i, 4, false) >= 1);
  assert.equal(retireAfter(3, 1, 2, false), 2);
});
