// The egress process binds a session only as the front allowed (B2 of issue 23's
// review): the front sends it a one-time grant (slot process, request id, proxy or
// none) when it hands a slot process a request, and a bind that matches no unused
// grant is refused there, before any upstream proxy is asked. A slot process that
// escaped our code cannot leave through a proxy its request's key may not use,
// nor take another request's id. The "slot process" here is the test, on a channel
// the front made for it, saying what a taken-over slot process could say
// (test/helpers/pretend-slot.ts).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { after, before, test } from 'node:test';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { connectAs } from '../../helpers/connect-as.js';
import { pretendSlot as pretend } from '../../helpers/pretend-slot.js';
import { startTestService, type TestService } from '../../helpers/service.js';
import { MAX_CHECKS_IN_FLIGHT_PER_CHANNEL } from '../../../src/protocol/egress-channel.js';
import { loadConfig } from '../../../src/common/config.js';
import { slotUsers } from '../../../src/front/host/users.js';

/** As root, slot 0's user (its Chromium's): only the slots' sockets are served on a context's port. */
const SLOT_USER = slotUsers(loadConfig({}))?.[0];
const pretendSlot = (index: number): ReturnType<typeof pretend> => pretend(svc, index);

const fixtures = new FixtureServer({ '/': html('<title>target</title>') });
/** Stands in for an upstream proxy: counts every connection the guard makes to it. */
let proxy: Server;
let proxyAsked = 0;
let svc: TestService;

before(async () => {
  await fixtures.start();
  proxy = createServer((s) => {
    proxyAsked++;
    s.destroy();
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const proxyPort = (proxy.address() as { port: number }).port;
  svc = await startTestService(
    {
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      PROXIES: `up=http://user:Secret-b2-91f3@127.0.0.1:${proxyPort}`,
    },
    { egressSeam: { loopbackOnly: true } },
  );
});
after(async () => {
  await svc?.close();
  await fixtures.close();
  await new Promise<void>((r) => proxy.close(() => r()));
});

/** The first line the guard answers a CONNECT to the fixture on `port` with (or 'closed'), asked as Chromium would. */
async function connectThrough(port: number): Promise<string> {
  return await connectAs(SLOT_USER, port, `127.0.0.1:${fixtures.port}`).answer;
}

test('a slot process binding to a proxy its request was not granted is refused, and the proxy is never asked', async () => {
  const slot = await pretendSlot(3_000_001);
  try {
    // The front handed this slot process request "b2-a", to leave through no proxy.
    const grant = svc.service.egress.grant(3_000_001, 'b2-a', undefined);
    const opened = await slot.ask({ op: 'open' });
    assert.ok(opened.ok && opened.port !== undefined, JSON.stringify(opened));
    const refused = await slot.ask({ op: 'bind', s: opened.s, requestId: 'b2-a', proxy: 'up' });
    assert.equal(refused.ok, false);
    assert.match(String(refused.error), /not granted proxy "up"/);
    // Unbound, the session carries nothing.
    assert.match(await connectThrough(opened.port), /403|closed/);
    assert.equal(proxyAsked, 0, 'the proxy was asked');
    // The grant itself still holds, for what it allows: no proxy.
    const bound = await slot.ask({ op: 'bind', s: opened.s, requestId: 'b2-a' });
    assert.equal(bound.ok, true, JSON.stringify(bound));
    assert.match(await connectThrough(opened.port), /^HTTP\/1\.1 200/);
    assert.equal(proxyAsked, 0, 'the proxy was asked');
    svc.service.egress.revoke(grant);
  } finally {
    slot.close();
  }
});

test("a slot process cannot bind a session to a request it was not granted (another slot process's, or one already bound)", async () => {
  const slot = await pretendSlot(3_000_002);
  try {
    // Another slot process's request, through the proxy.
    const grant = svc.service.egress.grant(3_000_003, 'b2-b', 'up');
    const first = await slot.ask({ op: 'open' });
    const taken = await slot.ask({ op: 'bind', s: first.s, requestId: 'b2-b', proxy: 'up' });
    assert.equal(taken.ok, false);
    assert.match(String(taken.error), /not granted to this slot/);
    // Its own grant is good for one bind only.
    const own = svc.service.egress.grant(3_000_002, 'b2-c', undefined);
    assert.equal((await slot.ask({ op: 'bind', s: first.s, requestId: 'b2-c' })).ok, true);
    const second = await slot.ask({ op: 'open' });
    const again = await slot.ask({ op: 'bind', s: second.s, requestId: 'b2-c' });
    assert.equal(again.ok, false);
    assert.match(String(again.error), /not granted to this slot/);
    assert.equal(proxyAsked, 0, 'the proxy was asked');
    svc.service.egress.revoke(grant);
    svc.service.egress.revoke(own);
  } finally {
    slot.close();
  }
});

test('the service itself still binds every request (its grants reach the egress process)', async () => {
  const r = await svc.post({ url: fixtures.url('/'), script: 'return await page.title()' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, 'target');
});

test('a slot process cannot have more than MAX_CHECKS_IN_FLIGHT_PER_CHANNEL URL checks in flight: the extra are refused, with a clear error', async () => {
  const slot = await pretendSlot(3_000_004);
  try {
    // All in one write: the egress process starts each before any can finish.
    const n = MAX_CHECKS_IN_FLIGHT_PER_CHANNEL + 36;
    const answers = await slot.askAll(
      Array.from({ length: n }, () => ({ op: 'check', host: '127.0.0.1', port: fixtures.port })),
    );
    const refused = answers.filter((a) => !a.ok);
    assert.ok(refused.length > 0, 'some were refused');
    assert.ok(answers.filter((a) => a.ok).length >= MAX_CHECKS_IN_FLIGHT_PER_CHANNEL);
    for (const a of refused) assert.match(String(a.error), /egress checks in flight at once; this one was refused/);
    // The limit is on checks in flight, not a count: the next one is answered.
    const after = await slot.ask({ op: 'check', host: '127.0.0.1', port: fixtures.port });
    assert.equal(after.ok, true, JSON.stringify(after));
  } finally {
    slot.close();
  }
});
