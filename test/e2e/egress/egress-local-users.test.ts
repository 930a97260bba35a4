// A context's port at the egress guard is on loopback, where every process of
// this machine can reach it (B3 of issue 23's review): during a request it would
// be an open proxy, with the operator's upstream credentials, for any of them.
// As root (slot processes and Chromium run as a slot user), a context's port serves
// only sockets of that user; any other process's connection is closed unread.
// And a connection opened while the context was spare is closed when the context
// is bound to a request, never carried into it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../../src/common/config.js';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { connectAs } from '../../helpers/connect-as.js';
import { pretendSlot, type PretendSlot } from '../../helpers/pretend-slot.js';
import { startTestService, type TestService } from '../../helpers/service.js';
import { lookupUser, slotUsers } from '../../../src/front/host/users.js';

const fixtures = new FixtureServer({ '/': html('<title>target</title>') });
const ROOT = process.getuid?.() === 0;
/** As root, slot 0's user (its Chromium's; undefined otherwise: the check is off, and said so in the README). */
const SLOT_USER = slotUsers(loadConfig({}))?.[0];
const NOBODY = lookupUser('nobody');
let svc: TestService;
let slot: PretendSlot;

before(async () => {
  await fixtures.start();
  svc = await startTestService({ EGRESS_ALLOWLIST: fixtures.allowEntry }, { egressSeam: { loopbackOnly: true } });
  slot = await pretendSlot(svc, 4_000_001);
});
after(async () => {
  slot?.close();
  await svc?.close();
  await fixtures.close();
});

const target = (): string => `127.0.0.1:${fixtures.port}`;

test(
  "a local process of another user than the slot processes' is refused on a context's port, even during its request",
  { skip: !ROOT && 'the service is not root: every process is of the same user (docs/architecture.md)' },
  async () => {
    assert.ok(NOBODY, 'the user nobody exists');
    const { port } = await slot.session('b3-live');
    const before = (await svc.service.guard.counts()).otherUsers;
    const stranger = connectAs(NOBODY, port, target());
    assert.equal(await stranger.answer, 'closed');
    // Root is not the slot processes' user either.
    assert.equal(await connectAs(undefined, port, target()).answer, 'closed');
    assert.equal((await svc.service.guard.counts()).otherUsers, before + 2);
    // Control: Chromium's user is served on the same port (so the test can fail).
    assert.match(await connectAs(SLOT_USER, port, target()).answer, /^HTTP\/1\.1 200/);
  },
);

test('a connection opened while the context was spare is closed when it is bound, not tunnelled for the request', async () => {
  const { s, port } = await slot.session();
  // Connected while spare, saying nothing yet.
  const early = connectAs(SLOT_USER, port, target(), true);
  await early.connected;
  // The guard has taken it (counted) before the bind.
  const counted = (await svc.service.guard.counts()).clientConnections;
  assert.ok(counted > 0);
  svc.service.egress.grant(4_000_001, 'b3-spare', undefined);
  const bound = await slot.ask({ op: 'bind', s, requestId: 'b3-spare' });
  assert.equal(bound.ok, true, JSON.stringify(bound));
  early.go();
  // Before: the CONNECT was tunnelled to the target as the request's traffic.
  assert.equal(await early.answer, 'closed');
  // A connection made after the bind is the request's.
  assert.match(await connectAs(SLOT_USER, port, target()).answer, /^HTTP\/1\.1 200/);
});

test('requests are served as before (Chromium connects after its context is bound)', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await svc.post({
      url: fixtures.url('/'),
      script: 'await page.goto(page.url()); return await page.title()',
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data, 'target');
  }
});
