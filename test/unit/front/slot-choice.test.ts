// Which free slot a job takes (src/front/slots/slot-choice.ts choose): not the
// slot another key is between two requests on, then one with a context ready.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { choose } from '../../../src/front/slots/slot-choice.js';
import { ACTIVE_GRACE_MS } from '../../../src/front/tenancy/scheduler.js';

const browser = (
  contextsReady: number,
): { ready: boolean; pid: undefined; pids: number[]; restarts: number; recycles: number; contextsReady: number } => ({
  ready: true,
  pid: undefined,
  pids: [],
  restarts: 0,
  recycles: 0,
  contextsReady,
});
const slot = (name: string, contextsReady: number, last?: { client: string; at: number }) => ({
  name,
  proc: { browser: browser(contextsReady) },
  ...(last ? { last } : {}),
});
const NOW = 1_000_000;

test('a key whose heavy request left its Chromium relaunching does not take the slot another key just used', () => {
  const relaunching = slot('x', 0, { client: 'attacker', at: NOW - 50 });
  const innocents = slot('y', 2, { client: 'innocent', at: NOW - 200 });
  assert.equal(choose([relaunching, innocents], 'attacker', NOW)?.name, 'x');
  assert.equal(choose([relaunching, innocents], 'innocent', NOW)?.name, 'y');
});

test('a key alone takes the slot with a context ready, whichever it used', () => {
  const relaunching = slot('x', 0, { client: 'a', at: NOW - 50 });
  const readyOne = slot('y', 1, { client: 'a', at: NOW - 200 });
  assert.equal(choose([relaunching, readyOne], 'a', NOW)?.name, 'y');
});

test('another key’s slot is taken when it is the only one free, or once that key has been away ACTIVE_GRACE_MS', () => {
  const others = slot('y', 1, { client: 'b', at: NOW - 10 });
  assert.equal(choose([others], 'a', NOW)?.name, 'y');
  const mine = slot('x', 0, { client: 'a', at: NOW - 10 });
  const stale = slot('y', 1, { client: 'b', at: NOW - ACTIVE_GRACE_MS });
  assert.equal(choose([mine, stale], 'a', NOW)?.name, 'y');
});

test('nothing known: the lowest free slot; nothing free: none', () => {
  assert.equal(choose([slot('0', 0), slot('1', 0)], undefined, NOW)?.name, '0');
  assert.equal(choose([], 'a', NOW), undefined);
});

test("a key whose own slot's process is being replaced waits for it rather than take the slot another key just used", () => {
  const others = slot('y', 1, { client: 'innocent', at: NOW - 10 });
  const replaced = { last: { client: 'attacker', at: NOW - 5000 } };
  assert.equal(choose([others], 'attacker', NOW, [replaced]), undefined, 'the attacker waits for its own slot');
  assert.equal(choose([others], 'innocent', NOW, [replaced])?.name, 'y', 'the other key takes its own');
  // Another key's slot being replaced is no reason to wait; nor is one's own when a slot nobody else uses is free.
  assert.equal(choose([others], 'third', NOW, [replaced])?.name, 'y');
  const nobodys = slot('z', 1);
  assert.equal(choose([others, nobodys], 'attacker', NOW, [replaced])?.name, 'z');
  // Once the other key has been away ACTIVE_GRACE_MS its slot is free to take.
  const away = slot('y', 1, { client: 'innocent', at: NOW - ACTIVE_GRACE_MS });
  assert.equal(choose([away], 'attacker', NOW, [replaced])?.name, 'y');
});
