// The fair scheduler: global slots, per-key caps, turn-taking between keys, the
// bounded queue and its 429s. No timing thresholds: order and counts only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../../../src/common/errors.js';
import { FairScheduler, type Ticket } from '../../../src/front/tenancy/scheduler.js';
import { MemoryStore, type LimitStore } from '../../../src/front/tenancy/store.js';
import { until } from '../../helpers/wait.js';

function scheduler(over: Partial<ConstructorParameters<typeof FairScheduler>[0]> = {}): FairScheduler {
  return new FairScheduler({
    maxConcurrency: 1,
    queueLimit: 100,
    queueTimeoutMs: 10_000,
    store: new MemoryStore(),
    leaseTtlMs: 60_000,
    ...over,
  });
}

const A: Ticket = { client: 'a', maxConcurrency: undefined };
const B: Ticket = { client: 'b', maxConcurrency: undefined };
const C: Ticket = { client: 'c', maxConcurrency: undefined };

/** Acquires for each ticket in order, records the order slots are granted in, and holds each slot until released by the test. */
function burst(s: FairScheduler, tickets: Ticket[], order: string[]): Array<Promise<() => void>> {
  return tickets.map((t, i) =>
    s.acquire(t).then((release) => {
      order.push(`${t.client}${i}`);
      return release;
    }),
  );
}

/** Releases each slot as soon as it is granted, one at a time, until all are done. */
async function drain(grants: Array<Promise<() => void>>): Promise<void> {
  const pending = new Set(grants.keys());
  while (pending.size > 0) {
    const [release, i] = await Promise.race([...pending].map((i) => grants[i]!.then((r) => [r, i] as const)));
    pending.delete(i);
    release();
  }
}

test('a burst from one key does not starve another: the other key runs next', async () => {
  const s = scheduler();
  const order: string[] = [];
  const grants = burst(s, [A, A, A, A, A, B], order);
  await drain(grants);
  assert.deepEqual(order, ['a0', 'b5', 'a1', 'a2', 'a3', 'a4']);
});

test('three keys with backlogs take turns', async () => {
  const s = scheduler();
  const order: string[] = [];
  await drain(burst(s, [A, A, A, B, B, B, C, C, C], order));
  assert.deepEqual(order, ['a0', 'b3', 'c6', 'a1', 'b4', 'c7', 'a2', 'b5', 'c8']);
});

test('at most maxConcurrency slots are held at once', async () => {
  const s = scheduler({ maxConcurrency: 3 });
  const releases = await Promise.all([s.acquire(A), s.acquire(B), s.acquire(C)]);
  let fourth = false;
  const p = s.acquire(A).then((r) => {
    fourth = true;
    return r;
  });
  await new Promise((r) => setImmediate(r));
  assert.equal(fourth, false);
  assert.equal(s.running, 3);
  assert.equal(s.queued, 1);
  releases[0]?.();
  (await p)();
  assert.equal(fourth, true);
  releases[1]?.();
  releases[2]?.();
  assert.equal(s.running, 0);
});

test("a key's own cap holds it back while other keys use the free slots", async () => {
  const s = scheduler({ maxConcurrency: 4 });
  const capped: Ticket = { client: 'capped', maxConcurrency: 2 };
  const order: string[] = [];
  const grants = burst(s, [capped, capped, capped, capped, B], order);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, ['capped0', 'b4', 'capped1']);
  assert.equal(s.running, 3);
  assert.equal(s.queued, 2);
  (await grants[0])?.();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, ['capped0', 'b4', 'capped1', 'capped2']);
  for (const g of grants.slice(1)) (await g)();
  assert.equal(s.running, 0);
});

test('release is idempotent: releasing twice frees one slot', async () => {
  const s = scheduler({ maxConcurrency: 2 });
  const r1 = await s.acquire(A);
  await s.acquire(B);
  r1();
  r1();
  assert.equal(s.running, 1);
});

test('waiting longer than queueTimeoutMs is 429 RATE_LIMIT_EXCEEDED with Retry-After', async () => {
  const s = scheduler({ queueTimeoutMs: 50 });
  const held = await s.acquire(A);
  await assert.rejects(s.acquire(B), (e: ApiError) => {
    assert.equal(e.code, 'RATE_LIMIT_EXCEEDED');
    assert.equal(e.status, 429);
    assert.match(e.message, /no free slot within 50 ms/);
    assert.equal(e.headers['Retry-After'], '1');
    return true;
  });
  assert.equal(s.queued, 0);
  held();
  assert.equal(s.running, 0);
});

test('a full queue refuses at once with 429 and Retry-After', async () => {
  const s = scheduler({ queueLimit: 2, queueTimeoutMs: 5000 });
  const held = await s.acquire(A);
  const waiting = [s.acquire(A), s.acquire(A)];
  await assert.rejects(
    s.acquire(A),
    (e: ApiError) =>
      e.code === 'RATE_LIMIT_EXCEEDED' && /queue is full/.test(e.message) && e.headers['Retry-After'] === '5',
  );
  held();
  for (const w of waiting) (await w)();
});

test('one key cannot fill the queue against another: its newest waiter gives way', async () => {
  const s = scheduler({ queueLimit: 4 });
  const held = await s.acquire(A);
  const fromA = [s.acquire(A), s.acquire(A), s.acquire(A), s.acquire(A)];
  const settled = fromA.map((p) =>
    p.then(
      () => 'granted',
      (e: ApiError) => e.code,
    ),
  );
  const b = s.acquire(B);
  assert.equal(await settled[3], 'RATE_LIMIT_EXCEEDED');
  assert.equal(s.queued, 4);
  held();
  (await b)();
  for (const p of fromA.slice(0, 3)) (await p)();
  assert.equal(s.running, 0);
});

test('a client that goes away while queued leaves the queue (503)', async () => {
  const s = scheduler();
  const held = await s.acquire(A);
  const ac = new AbortController();
  const p = s.acquire(B, ac.signal);
  ac.abort();
  await assert.rejects(p, (e: ApiError) => e.code === 'SERVICE_UNAVAILABLE');
  assert.equal(s.queued, 0);
  held();
});

test('a cap held elsewhere (the shared store says no) is asked for again until it is free', async () => {
  const shared = new MemoryStore();
  // Another instance holds the key's only lease.
  assert.equal(await shared.acquire('key:capped', 1, 'elsewhere', 60_000), true);
  // Counts the scheduler's requests for the capped key's lease, so the test waits for them, not for a while.
  let asked = 0;
  const counting: LimitStore = {
    hit: (...a) => shared.hit(...a),
    acquire: (key, cap, token, ttlMs) => {
      if (key === 'key:capped') asked++;
      return shared.acquire(key, cap, token, ttlMs);
    },
    release: (...a) => shared.release(...a),
    close: () => shared.close(),
  };
  const s = scheduler({ maxConcurrency: 2, store: counting });
  const capped: Ticket = { client: 'capped', maxConcurrency: 1 };
  let granted = false;
  const p = s.acquire(capped).then((r) => {
    granted = true;
    return r;
  });
  // Another key is not held up by it.
  (await s.acquire(B))();
  // Refused, then asked again and refused again: still waiting.
  await until(() => asked >= 2, 'the scheduler to ask for the lease a second time');
  assert.equal(granted, false);
  await shared.release('key:capped', 'elsewhere');
  const release = await p;
  assert.equal(granted, true);
  // The lease is taken in the shared store while the script runs, and returned after.
  assert.equal(await shared.acquire('key:capped', 1, 'probe', 60_000), false);
  release();
  await new Promise((r) => setImmediate(r));
  assert.equal(await shared.acquire('key:capped', 1, 'probe', 60_000), true);
});

test('a store that fails is treated as a taken cap, never as a free one', async () => {
  const failing: LimitStore = {
    hit: () => Promise.reject(new Error('down')),
    acquire: () => Promise.reject(new Error('down')),
    release: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  const s = scheduler({ store: failing, queueTimeoutMs: 300 });
  await assert.rejects(
    s.acquire({ client: 'capped', maxConcurrency: 1 }),
    (e: ApiError) => e.code === 'RATE_LIMIT_EXCEEDED',
  );
  assert.equal(s.running, 0);
});

/** Whether a grant has come yet, after the scheduler's pending work has run. */
async function granted(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setImmediate(r));
  return done;
}

test('a key alone uses every slot', async () => {
  const s = scheduler({ maxConcurrency: 2 });
  const [a1, a2] = [s.acquire(A), s.acquire(A)];
  assert.equal(await granted(a1), true);
  assert.equal(await granted(a2), true);
  (await a1)();
  (await a2)();
});

test('a key between two requests keeps its share: another key’s second script waits for its own slot to close', async () => {
  // As the neighbour bench: the attacker's slot still closes a heavy request
  // (its release comes after the reply) when the attacker asks again.
  const s = scheduler({ maxConcurrency: 2 });
  const attacker1 = await s.acquire(A);
  const innocent1 = await s.acquire(B);
  innocent1(); // the innocent key, between two requests
  const attacker2 = s.acquire(A);
  assert.equal(await granted(attacker2), false, 'the attacker does not take the slot the innocent key just left');
  const innocent2 = s.acquire(B);
  assert.equal(await granted(innocent2), true, 'the innocent key gets it at once');
  attacker1(); // the attacker's close ends
  assert.equal(await granted(attacker2), true);
  (await innocent2)();
  (await attacker2)();
});

test('held back for at most ACTIVE_GRACE_MS: a key that does not come back leaves the slot to the one waiting', async () => {
  const s = scheduler({ maxConcurrency: 2 });
  const a1 = await s.acquire(A);
  (await s.acquire(B))();
  const a2 = s.acquire(A);
  assert.equal(await granted(a2), false);
  // B never comes back: a2 is granted once B no longer counts as active, a1 still running.
  (await a2)();
  a1();
});

test('three keys on two slots: each holds one while all are active', async () => {
  const s = scheduler({ maxConcurrency: 2 });
  const a1 = await s.acquire(A);
  const b1 = await s.acquire(B);
  const order: string[] = [];
  const grants = burst(s, [A, C], order);
  b1();
  await until(() => order.length === 1, 'one grant');
  assert.deepEqual(order, ['c1'], 'the free slot goes to the key holding none');
  a1();
  await drain(grants);
  assert.deepEqual(order, ['c1', 'a0']);
});

test('a key waiting only for its cap taken on another instance does not hold a slot idle against another key', async () => {
  // The shared store says no for key B: A's second script takes the free slot rather than wait for B.
  const store: LimitStore = {
    hit: () => Promise.reject(new Error('not used')),
    acquire: () => Promise.resolve(false),
    release: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  const s = scheduler({ maxConcurrency: 2, store, queueTimeoutMs: 5000 });
  const a1 = await s.acquire(A);
  const b = s.acquire({ client: 'b', maxConcurrency: 1 }).catch(() => undefined);
  const a2 = s.acquire(A);
  await until(() => s.running === 2, 'A’s second script to run');
  (await a2)();
  a1();
  s.rejectWaiting(new ApiError('SERVICE_UNAVAILABLE', 'test over'));
  await b;
});
