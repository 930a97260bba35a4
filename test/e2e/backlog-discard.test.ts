// A Chromium left with a page's console flood queued when a heavy request ends
// would send all of it before the answer to closing the request's context
// (lease.ts BACKLOG_DRAIN_BYTES): it is killed and replaced instead.
// Through the service, whether a Chromium is left backed up depends on the
// machine (a heavy renderer runs at nice 19 and its lane is paused while
// another request works: on a fast machine the executor keeps up with what it
// still makes). Here the backlog is made for certain: a BrowserHost launched
// as an executor's is, the lease's messages held as a lane's pause holds them
// (cdp-transport.ts hold), a flood of a known size logged in full — the page
// tells the fixture when it is done, over the network, not over the held pipe.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { BrowserHost } from '../../src/slot/browser/browser-host.js';
import { BACKLOG_DRAIN_BYTES, type PageLease } from '../../src/slot/browser/lease.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../helpers/fixtures.js';
import { startGuardedHost, type GuardedHost } from '../helpers/guarded-host.js';
import { capturingLogger } from '../helpers/service.js';
import { alive } from '../helpers/system.js';
import { until } from '../helpers/wait.js';

const fixtures = new FixtureServer({
  '/example': html(EXAMPLE_DOMAIN_HTML),
  '/flooded': (_req, res) => {
    res.writeHead(204, { 'access-control-allow-origin': '*' });
    res.end();
  },
});
const log = capturingLogger();
let guarded: GuardedHost;
let host: BrowserHost;

const discarded = (): number => log.lines.filter((l) => String(l.msg).startsWith('chromium discarded')).length;

before(async () => {
  await fixtures.start();
  guarded = await startGuardedHost({ fixturePort: fixtures.port, logger: log.logger });
  host = guarded.host;
});
after(async () => {
  await guarded.close();
  await fixtures.close();
});

/**
 * A lease whose page logs `lines` console lines of 4 kB while the Chromium's
 * messages are held, and has told the fixture it is done: all of it is then
 * queued, 1 MiB in the transport and the rest in Chromium.
 */
async function floodedLease(name: string, lines: number): Promise<PageLease> {
  const lease = await host.lease(name);
  await lease.page.goto(fixtures.url('/example'));
  lease.page.on('console', () => undefined);
  const told = fixtures.hits.get('/flooded') ?? 0;
  lease.holdMessages(true);
  lease.page
    .evaluate(
      `(() => {
      for (let i = 0; i < ${lines}; i++) console.log('y'.repeat(4000));
      return fetch('/flooded').then(() => 'done');
    })()`,
    )
    .catch(() => undefined);
  await until(() => (fixtures.hits.get('/flooded') ?? 0) > told, 'the page to have logged its flood', {
    timeoutMs: 30_000,
  });
  return lease;
}

/** A next request's lease: it loads the example page; the pid of the Chromium that served it. */
async function nextRequestServedBy(name: string): Promise<number> {
  const next = await host.lease(name);
  try {
    await next.page.goto(fixtures.url('/example'));
    assert.equal(await next.page.title(), 'Example Domain');
    return next.pid;
  } finally {
    await next.close();
  }
}

test('a heavy request whose Chromium still has its flood queued at the end: the Chromium is killed and replaced, not drained', async () => {
  await until(() => host.ready, 'the browser to be ready', { timeoutMs: 60_000 });
  const recycles = host.recycles;
  const seen = discarded();
  // 4000 lines of 4 kB: ~16 MB, many times what the transport holds and BACKLOG_DRAIN_BYTES.
  assert.ok(4000 * 4000 > 4 * BACKLOG_DRAIN_BYTES);
  const lease = await floodedLease('flood-heavy', 4000);
  const pid = lease.pid;
  // As the lanes end a paused request: its messages go on, then its context is closed as heavy.
  lease.holdMessages(false);
  await lease.close(true);
  await until(() => discarded() === seen + 1, 'the flooded Chromium to be discarded', { timeoutMs: 30_000 });
  assert.equal(host.recycles, recycles + 1, 'counted as a recycle');
  await until(() => !alive(pid), 'the discarded Chromium to be gone');
  assert.notEqual(await nextRequestServedBy('after-flood'), pid, 'the next request is given the new Chromium');
});

test('the same flood at the end of a request within its CPU budget is drained: its Chromium stays', async () => {
  await until(() => host.ready, 'the browser to be ready', { timeoutMs: 60_000 });
  const recycles = host.recycles;
  const seen = discarded();
  const lease = await floodedLease('flood-light', 4000);
  const pid = lease.pid;
  lease.holdMessages(false);
  await lease.close(false);
  assert.equal(await nextRequestServedBy('after-light'), pid, 'the same Chromium serves the next request');
  assert.equal(discarded(), seen);
  assert.equal(host.recycles, recycles);
});
