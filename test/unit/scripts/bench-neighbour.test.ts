// The neighbour bench's held-slots line (issue 45 point 3): an idle key's wait
// against the end of the other key's first running request, and the pace that
// lets the console-flood pair be sent while the innocent key is idle.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { heldRound, InnocentPace } from '../../../scripts/bench/neighbour.js';

const at = (sentAt: number, admittedAt: number, endAt: number) => ({ sentAt, admittedAt, endAt });

test("admitted when the other key's first running request ended: its wait, the slot's work after it, what the other had left", () => {
  // Two running (ending at 3000 and 4000), two queued behind them; the innocent request sent at 1300.
  const hostile = [at(0, 5, 3000), at(1000, 1005, 4000), at(1200, 3020, 6020), at(1200, 4010, 7010)];
  assert.deepEqual(heldRound(at(1300, 3030, 3200), hostile), {
    waitMs: 1730,
    firstRunningEndMs: 1700,
    admittedAfterFirstEndMs: 30,
    // The second running request, and the queued one admitted in the freed slot first.
    hostileRemainingMs: [970, 2990],
  });
});

test('an innocent request served after the queued ones shows how long past the first end it waited', () => {
  const hostile = [at(0, 5, 3000), at(1000, 1005, 4000), at(1200, 3020, 6020), at(1200, 4010, 7010)];
  const r = heldRound(at(1300, 6030, 6200), hostile);
  assert.equal(r.firstRunningEndMs, 1700);
  assert.equal(r.admittedAfterFirstEndMs, 3030);
  assert.deepEqual(r.hostileRemainingMs, [980]);
});

test('the innocent key held by the pace waits before its next request until released, and says it was held', async () => {
  const pace = new InnocentPace();
  assert.equal(await pace.before(), false, 'not held: goes on');
  const there = pace.hold();
  const order: string[] = [];
  const next = pace.before().then((held) => order.push(`request (held: ${held})`));
  assert.equal(await there, true);
  order.push('pair sent');
  pace.release();
  await next;
  assert.deepEqual(order, ['pair sent', 'request (held: true)']);
  assert.equal(await pace.before(), false, 'released: goes on');
});

test('a hold ends when the innocent key has sent its last request, rather than wait for ever', async () => {
  const pace = new InnocentPace();
  const pending = pace.hold();
  pace.end();
  assert.equal(await pending, false);
  assert.equal(await pace.hold(), false, 'after the end: at once');
});
