// Rate limits over the in-memory store, failed-authentication limits per
// address, and how the client address is found behind a balancer.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import type { ApiError } from '../../src/errors.js';
import { clientAddress } from '../../src/http/auth.js';
import { AuthFailureLimiter, RateLimiter, rateHeaders } from '../../src/http/rate-limit.js';
import { MemoryStore } from '../../src/tenancy/store.js';

function clock(start = 1_000_000): { now: () => number; advance(ms: number): void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

test('the memory store counts per id and window, and starts a new window when one ends', async () => {
  const c = clock();
  const s = new MemoryStore(c.now);
  assert.deepEqual(await s.hit('a', 1000), { count: 1, resetMs: 1000 });
  c.advance(400);
  assert.deepEqual(await s.hit('a', 1000), { count: 2, resetMs: 600 });
  assert.deepEqual(await s.hit('b', 1000), { count: 1, resetMs: 1000 });
  c.advance(600);
  assert.deepEqual(await s.hit('a', 1000), { count: 1, resetMs: 1000 });
});

test('memory leases: at most cap at once, given back on release or when they expire', async () => {
  const c = clock();
  const s = new MemoryStore(c.now);
  assert.equal(await s.acquire('k', 2, 't1', 1000), true);
  assert.equal(await s.acquire('k', 2, 't2', 1000), true);
  assert.equal(await s.acquire('k', 2, 't3', 1000), false);
  await s.release('k', 't1');
  assert.equal(await s.acquire('k', 2, 't3', 1000), true);
  c.advance(1000);
  assert.equal(await s.acquire('k', 2, 't4', 1000), true);
  assert.equal(await s.acquire('k', 2, 't5', 1000), true);
});

test('over its limit a key gets 429 RATE_LIMIT_EXCEEDED with RateLimit-* and Retry-After', async () => {
  const rate = new RateLimiter(new MemoryStore());
  assert.deepEqual(rateHeaders(await rate.hit('acme', 2, 60_000)), {
    'RateLimit-Limit': '2',
    'RateLimit-Remaining': '1',
    'RateLimit-Reset': '60',
  });
  assert.equal((await rate.hit('acme', 2, 60_000)).remaining, 0);
  await assert.rejects(rate.hit('acme', 2, 60_000), (e: ApiError) => {
    assert.equal(e.status, 429);
    assert.equal(e.code, 'RATE_LIMIT_EXCEEDED');
    assert.equal(e.headers['RateLimit-Limit'], '2');
    assert.equal(e.headers['RateLimit-Remaining'], '0');
    assert.equal(e.headers['Retry-After'], '60');
    return true;
  });
  // Another key has its own count.
  assert.equal((await rate.hit('other', 2, 60_000)).remaining, 1);
});

test('key guessing is slow: past the limit of failures an address is refused before its key is looked at', async () => {
  const c = clock();
  const limiter = new AuthFailureLimiter(new MemoryStore(c.now), 3, 10_000);
  for (let i = 0; i < 3; i++) {
    limiter.check('198.51.100.7', c.now());
    assert.equal(await limiter.failed('198.51.100.7', c.now()), undefined);
  }
  const refusal = await limiter.failed('198.51.100.7', c.now());
  assert.equal(refusal?.code, 'RATE_LIMIT_EXCEEDED');
  assert.equal(refusal?.headers['Retry-After'], '10');
  assert.throws(
    () => limiter.check('198.51.100.7', c.now()),
    (e: ApiError) => e.status === 429,
  );
  // Other addresses are not affected.
  limiter.check('198.51.100.8', c.now());
  c.advance(10_000);
  limiter.check('198.51.100.7', c.now());
});

function req(remoteAddress: string, xff?: string): IncomingMessage {
  return {
    socket: { remoteAddress },
    headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
  } as unknown as IncomingMessage;
}

test('the client address is the peer unless TRUST_PROXY says how many balancers to believe', () => {
  assert.equal(clientAddress(req('10.0.0.5', '203.0.113.9'), 0), '10.0.0.5');
  assert.equal(clientAddress(req('10.0.0.5', '203.0.113.9'), 1), '203.0.113.9');
});

test('a forged X-Forwarded-For entry cannot choose the address the limit counts', () => {
  // The client sent "1.2.3.4"; the balancer appended the address it saw.
  assert.equal(clientAddress(req('10.0.0.5', '1.2.3.4, 203.0.113.9'), 1), '203.0.113.9');
  assert.equal(clientAddress(req('10.0.0.5', 'not-an-address'), 1), '10.0.0.5');
  assert.equal(clientAddress(req('10.0.0.5'), 1), '10.0.0.5');
});
