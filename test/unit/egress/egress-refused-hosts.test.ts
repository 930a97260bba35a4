// The hosts a request's key refused, as the guard tells the slot process of them
// (docs/keys-and-limits.md): each host:port once, the first MAX_REFUSED_HOSTS.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EgressSession } from '../../../src/egress/session.js';
import { MAX_REFUSED_HOSTS } from '../../../src/protocol/egress.js';

test('a page that tries thousands of hosts outside its key is told of the first few, each once', () => {
  const told: string[] = [];
  const session = new EgressSession(undefined, 1, () => undefined);
  session.observe({ refusedHost: (host, port) => told.push(`${host}:${port}`) });
  session.refusedByKey('Other.example', 443);
  session.refusedByKey('other.example', 443);
  for (let i = 0; i < 5_000; i++) session.refusedByKey(`h${i}.example`, 443);
  assert.equal(told.length, MAX_REFUSED_HOSTS);
  assert.equal(told[0], 'other.example:443');
  assert.equal(new Set(told).size, told.length, 'each once');
});
