// REPLY_MEMORY_BYTES: which reply gives way when the replies held for their
// readers pass the budget (the real server is tested in test/e2e/front/edge.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReplyBudget } from '../../../src/front/http/reply-budget.js';

const MB = 1024 * 1024;

/** A budget and the replies cut from it, by label. */
function budget(capacityBytes: number): {
  b: ReplyBudget;
  cut: string[];
  hold(owner: string, mb: number, label: string): () => void;
} {
  const b = new ReplyBudget(capacityBytes);
  const cut: string[] = [];
  return { b, cut, hold: (owner, mb, label) => b.hold(owner, mb * MB, () => cut.push(label)) };
}

test("one key's slow replies past the budget cut that key's oldest reply, never the one just added", () => {
  const { b, cut, hold } = budget(25 * MB);
  hold('slow', 10, 'slow-1');
  hold('slow', 10, 'slow-2');
  assert.deepEqual(cut, []);
  hold('slow', 10, 'slow-3');
  assert.deepEqual(cut, ['slow-1']);
  assert.equal(b.heldBytes, 20 * MB);
});

test("a key that holds many slow replies cannot cut another key's reply: its own give way", () => {
  const { b, cut, hold } = budget(25 * MB);
  hold('tenant', 10, 'tenant-1');
  hold('hog', 10, 'hog-1');
  hold('hog', 10, 'hog-2');
  // The hog's third reply is over the budget: the hog holds the most, so its oldest goes, not the tenant's.
  assert.deepEqual(cut, ['hog-1']);
  // However many more it makes, the tenant's reply stays.
  hold('hog', 10, 'hog-3');
  hold('hog', 10, 'hog-4');
  assert.deepEqual(cut, ['hog-1', 'hog-2', 'hog-3']);
  assert.equal(b.heldBytes, 20 * MB);
  // A key that itself holds the most gives way in turn, whoever it is.
  hold('tenant', 10, 'tenant-2');
  assert.deepEqual(cut, ['hog-1', 'hog-2', 'hog-3', 'tenant-1']);
});

test('a reply whose reader took it all no longer counts, and a released owner is forgotten', () => {
  const { b, cut, hold } = budget(25 * MB);
  const release = hold('a', 10, 'a-1');
  hold('a', 10, 'a-2');
  release();
  release();
  hold('a', 10, 'a-3');
  assert.deepEqual(cut, []);
  assert.equal(b.heldBytes, 20 * MB);
});

test('a reply alone larger than the budget is sent; the others give way to it', () => {
  const { b, cut, hold } = budget(15 * MB);
  hold('a', 10, 'a-1');
  const big = hold('b', 20, 'b-1');
  assert.deepEqual(cut, ['a-1']);
  big();
  assert.equal(b.heldBytes, 0);
});
