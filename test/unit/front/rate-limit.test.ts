// Rate limits over the in-memory store, failed-authentication limits per
// address, and how the client address is found behind a balancer.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import type { ApiError } from '../../../src/common/errors.js';
import { normalizeAddress } from '../../../src/front/http/address.js';
import { clientAddress } from '../../../src/front/http/auth.js';
import { AuthFailureLimiter, RateLimiter, rateHeaders } from '../../../src/front/tenancy/rate-limit.js';
import { MemoryStore } from '../../../src/front/tenancy/store.js';

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

test('key guessing is slow: past the limit of wrong keys an address gets 429 for each further wrong key until the window ends', async () => {
  const c = clock();
  const limiter = new AuthFailureLimiter(new MemoryStore(c.now), 3, 10_000);
  for (let i = 0; i < 3; i++) assert.equal(await limiter.failed('198.51.100.7'), undefined);
  const refusal = await limiter.failed('198.51.100.7');
  assert.equal(refusal?.code, 'RATE_LIMIT_EXCEEDED');
  assert.equal(refusal?.headers['Retry-After'], '10');
  // Other addresses are not affected.
  assert.equal(await limiter.failed('198.51.100.8'), undefined);
  c.advance(10_000);
  assert.equal(await limiter.failed('198.51.100.7'), undefined);
});

test('the memory store is an LRU of fixed capacity: 50,000 addresses leave it at its capacity, the recent ones kept', async () => {
  const s = new MemoryStore(Date.now, 1000);
  await s.hit('auth-failures:keep-me', 60_000);
  for (let i = 0; i < 50_000; i++) {
    await s.hit(`auth-failures:203.0.${i >> 8}.${i & 255}`, 60_000);
    if (i % 100 === 0) await s.hit('auth-failures:keep-me', 60_000);
  }
  assert.equal(s.size, 1000);
  // Used recently, so still counted (501 hits); the oldest addresses were forgotten.
  assert.equal((await s.hit('auth-failures:keep-me', 60_000)).count, 502);
  assert.equal((await s.hit('auth-failures:203.0.0.0', 60_000)).count, 1);
});

test("a flood of addresses cannot push out an API key's request count (which would reset its rate limit)", async () => {
  const s = new MemoryStore(Date.now, 100);
  for (let i = 0; i < 5; i++) await s.hit('key:acme', 60_000);
  for (let i = 0; i < 10_000; i++) await s.hit(`auth-failures:198.18.${i >> 8}.${i & 255}`, 60_000);
  assert.equal((await s.hit('key:acme', 60_000)).count, 6);
  assert.equal(s.size, 101);
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

test('addresses are counted as one per subscriber: IPv4-mapped as IPv4, IPv6 by its /64', () => {
  assert.equal(normalizeAddress('198.51.100.7'), '198.51.100.7');
  assert.equal(normalizeAddress('::ffff:198.51.100.7'), '198.51.100.7');
  assert.equal(normalizeAddress('::FFFF:c633:6407'), '198.51.100.7');
  assert.equal(normalizeAddress('2001:db8:1:2::1'), '2001:db8:1:2::/64');
  assert.equal(normalizeAddress('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
  assert.equal(normalizeAddress('2001:db8:1:3::1'), '2001:db8:1:3::/64');
  assert.equal(normalizeAddress('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.equal(normalizeAddress('::1'), '0:0:0:0::/64');
  assert.equal(normalizeAddress('unknown'), 'unknown');
});

test('behind a balancer, X-Forwarded-For addresses are normalised too', () => {
  assert.equal(clientAddress(req('10.0.0.5', '2001:db8:1:2::abcd'), 1), '2001:db8:1:2::/64');
  assert.equal(clientAddress(req('::ffff:10.0.0.5'), 0), '10.0.0.5');
});
