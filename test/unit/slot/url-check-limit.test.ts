// The request's URL is checked (its name looked up by the egress process) before a
// context is leased. That lookup is the request's own navigation: bounded by its
// navigation limit, and a failure of the caller's (400, a navigation timeout), never
// the service's preparation, which the front would retry in another slot after
// killing this one (a key's slow name server made slots die one after another).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../../src/common/config.js';
import { silentLogger } from '../../../src/common/log.js';
import type { EgressDecision } from '../../../src/protocol/egress.js';
import { runScrape, type ScrapeDeps } from '../../../src/slot/scrape/job.js';

/**
 * Deps whose egress checker answers after `ms` (never, when undefined, unless `release` is called); nothing past
 * the check is reachable.
 */
function deps(ms?: number, release?: { answer?: () => void }): ScrapeDeps {
  const unreachable = (): never => assert.fail('nothing is leased for a URL whose check did not end');
  return {
    config: loadConfig({ API_KEYS: 'unit-key-0123456789abcdef', NAVIGATION_TIMEOUT_MS: '30000' }),
    browser: { lease: unreachable } as unknown as ScrapeDeps['browser'],
    sandboxes: { take: unreachable } as unknown as ScrapeDeps['sandboxes'],
    checker: {
      check: () =>
        new Promise<EgressDecision>((resolve) => {
          const refuse = (): void => resolve({ ok: false, reason: 'loopback', code: 'NOT_ALLOWED', kind: 'loopback' });
          if (ms !== undefined) setTimeout(refuse, ms);
          if (release) release.answer = refuse;
        }),
    },
    logger: silentLogger(),
  };
}

test(
  "a URL whose name is not found within the request's navigation limit fails as the caller's navigation timeout",
  { timeout: 10_000 },
  async () => {
    const phases: string[] = [];
    const out = await runScrape(
      { url: 'http://slow-name.example/', outputFormat: 'json', options: { navigationTimeoutMs: 50 } },
      deps(),
      undefined,
      () => undefined, // the slot's wait for the abandoned check (next test)
      (p) => phases.push(p),
    );
    assert.equal(out.ok, false);
    if (out.ok) return;
    assert.equal(out.error.code, 'SCRAPING_FAILED');
    assert.equal(out.error.timeout, 'navigation');
    assert.equal(out.error.housekeeping, undefined, 'not the service’s preparation: no other slot retries it');
    assert.match(out.error.message, /not found within the navigation limit \(50 ms\)/);
    assert.deepEqual(phases, [], 'nothing was leased');
  },
);

test('a check that ends within the limit is answered by it (here a refusal), not by the limit', async () => {
  const out = await runScrape(
    { url: 'http://refused.example/', outputFormat: 'json', options: { navigationTimeoutMs: 5_000 } },
    deps(10),
  );
  assert.equal(out.ok, false);
  if (out.ok) return;
  assert.equal(out.error.code, 'SCRAPING_FAILED');
  assert.equal(out.error.timeout, undefined);
  assert.doesNotMatch(out.error.message, /navigation limit/);
});

test(
  'checks answered by the limit cannot pile up in the slot: it is not offered again before the abandoned check ends',
  { timeout: 10_000 },
  async () => {
    // SECURITY: a key with navigationTimeoutMs 1 and a name server that never answers would otherwise leave a
    // lookup in the egress process per request, up to the channel's bound, and the next tenant's checks refused.
    const release: { answer?: () => void } = {};
    let held: Promise<void> | undefined;
    const out = await runScrape(
      { url: 'http://silent-name.example/', outputFormat: 'json', options: { navigationTimeoutMs: 20 } },
      deps(undefined, release),
      undefined,
      (closing) => {
        held = closing;
      },
    );
    assert.equal(out.ok, false, 'the caller is answered at its limit');
    assert.ok(held, 'the slot is handed what it waits for before its next job');
    let settled = false;
    held.then(
      () => (settled = true),
      () => undefined,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(settled, false, 'the slot waits while the abandoned lookup is in flight');
    assert.ok(release.answer, 'the check was asked');
    release.answer();
    await held;
    assert.equal(settled, true);
  },
);
