// A Chromium left with a page's console flood queued when a request ends
// would send all of it before the answer to closing the request's context
// (lease.ts BACKLOG_DRAIN_BYTES): it is killed and replaced instead; a burst
// that is over is drained. The backlog is made for certain: a BrowserHost
// launched as a slot's is, a console listener slower than the page's flood (a
// known size, logged in full), and the page tells the fixture when it is done,
// over the network, not over the pipe.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { BrowserHost } from '../../../src/slot/browser/browser-host.js';
import { BACKLOG_DRAIN_BYTES, type PageLease } from '../../../src/slot/browser/lease.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { startGuardedHost, type GuardedHost } from '../../helpers/guarded-host.js';
import { capturingLogger } from '../../helpers/service.js';
import { alive } from '../../helpers/system.js';
import { until } from '../../helpers/wait.js';

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

/** Holds this process's one thread for `ms`: a listener slower than any page's console. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/**
 * A lease whose page logs `lines` console lines of 4 kB to a listener that
 * takes 2 ms for each, and has told the fixture it is done: most of it is then
 * queued, in the transport (up to its bound) and in Chromium.
 */
async function floodedLease(name: string, lines: number): Promise<PageLease> {
  const lease = await host.lease(name);
  await lease.page.goto(fixtures.url('/example'));
  lease.page.on('console', () => busy(2));
  const told = fixtures.hits.get('/flooded') ?? 0;
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

test('a request whose Chromium still has its flood queued at the end: the Chromium is killed and replaced, not drained', async () => {
  await until(() => host.ready, 'the browser to be ready', { timeoutMs: 60_000 });
  const recycles = host.recycles;
  const seen = discarded();
  // 4000 lines of 4 kB: ~16 MB, many times what the transport holds and BACKLOG_DRAIN_BYTES.
  assert.ok(4000 * 4000 > 4 * BACKLOG_DRAIN_BYTES);
  const lease = await floodedLease('flood-heavy', 4000);
  const pid = lease.pid;
  await lease.close();
  await until(() => discarded() === seen + 1, 'the flooded Chromium to be discarded', { timeoutMs: 30_000 });
  assert.equal(host.recycles, recycles + 1, 'counted as a recycle');
  await until(() => !alive(pid), 'the discarded Chromium to be gone');
  assert.notEqual(await nextRequestServedBy('after-flood'), pid, 'the next request is given the new Chromium');
});

test('a burst under BACKLOG_DRAIN_BYTES queued at the end is drained: its Chromium stays', async () => {
  await until(() => host.ready, 'the browser to be ready', { timeoutMs: 60_000 });
  const recycles = host.recycles;
  const seen = discarded();
  // 300 lines of 4 kB: past the transport's bound (backed up), under BACKLOG_DRAIN_BYTES.
  assert.ok(300 * 4000 < BACKLOG_DRAIN_BYTES);
  const lease = await floodedLease('flood-light', 300);
  const pid = lease.pid;
  await lease.close();
  assert.equal(await nextRequestServedBy('after-light'), pid, 'the same Chromium serves the next request');
  assert.equal(discarded(), seen);
  assert.equal(host.recycles, recycles);
});
