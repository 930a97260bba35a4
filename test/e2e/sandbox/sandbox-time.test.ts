// Honest time: no timer, interval or wait wakes a script before its time. One that
// cannot fire before the script's deadline never fires; the deadline ends the
// script with the timeout error. Many such scripts run side by side (the machine
// loaded by them and by whatever else runs), and every one must end with the
// timeout error: an early wake-up would return its value instead. The assertions
// are on outcomes, never on durations.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { serviceFor } from '../../helpers/service.js';

const TIMEOUT_MS = 1500;
const fixtures = new FixtureServer({
  '/page': html('<html><head><title>Fixture</title></head><body><p>hi</p></body></html>'),
});
const svc = serviceFor(fixtures, {
  SCRIPT_TIMEOUT_MS: String(TIMEOUT_MS),
  MAX_CONCURRENCY: '4',
  QUEUE_TIMEOUT_MS: '600000',
});

/** Scripts that would return a value only if something woke them before its time. */
const EARLY_WAKE_UPS: Record<string, string> = {
  'a timer far past the deadline': 'await new Promise((r) => setTimeout(r, 600000)); return "woke early"',
  'a timer exactly as long as the time limit': `await new Promise((r) => setTimeout(r, ${TIMEOUT_MS})); return "woke early"`,
  'a timer longer than the time left after a first one': `await new Promise((r) => setTimeout(r, 500)); await new Promise((r) => setTimeout(r, ${TIMEOUT_MS - 400})); return "woke early"`,
  'an interval whose period outlasts the script': `await new Promise((r) => setInterval(r, ${TIMEOUT_MS * 2})); return "woke early"`,
  'a waitForSelector whose timeout outlasts the script, caught': `try { await page.waitForSelector('#never', { timeout: 600000 }); } catch (e) { return 'woke early: ' + e.name; } return 'found';`,
  'a waitForSelector with no timeout (0), caught': `try { await page.waitForSelector('#never', { timeout: 0 }); } catch (e) { return 'woke early: ' + e.name; } return 'found';`,
  'a default timeout that outlasts the script, caught': `page.setDefaultTimeout(600000); try { await page.waitForSelector('#never'); } catch (e) { return 'woke early: ' + e.name; } return 'found';`,
  'a waitForRequest whose timeout outlasts the script, caught': `try { await page.waitForRequest(() => false, { timeout: 600000 }); } catch (e) { return 'woke early: ' + e.name; } return 'found';`,
};

test('no timer, interval or wait wakes a script before its time: many side by side, every one times out', async () => {
  const names = Object.keys(EARLY_WAKE_UPS);
  // Three of each at once: more than MAX_CONCURRENCY, so the service is busy while they wait.
  const runs = [...names, ...names, ...names].map(async (name) => {
    const r = await svc.post({ url: fixtures.url('/page'), script: EARLY_WAKE_UPS[name] ?? '' });
    return { name, status: r.status, code: r.body.code, error: String(r.body.error), data: r.body.data };
  });
  const outcomes = await Promise.all(runs);
  const early = outcomes.filter(
    (o) => o.status !== 400 || !new RegExp(`timed out after ${TIMEOUT_MS} ms`).test(o.error),
  );
  assert.deepEqual(early, [], 'scripts that ended otherwise than with the timeout error');
});

test('a timer that fits in the time left still fires', async () => {
  const r = await svc.post({
    url: fixtures.url('/page'),
    script: 'await new Promise((r) => setTimeout(r, 50)); return "fired"',
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.data, 'fired');
});
