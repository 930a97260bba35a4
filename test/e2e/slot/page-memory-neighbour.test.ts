// Page-memory bombs in a row, in two slots at once, beside a neighbour in the
// third (issue 32 point 6, MAX_CONCURRENCY=3 PAGE_MEMORY_MB=256): each bomb is
// 400 MEMORY_LIMIT_EXCEEDED, every request of the neighbour is 200 and it is
// served while the bombs go off, and each bomb's slot serves the next bomb
// without waiting on anything of another slot (each slot has its own process
// and Chromium; nothing is shared between slots, and a lease empties the clipboard
// from its own page, waiting on no clean-up of the request before).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { startTestService, type Reply, type TestService } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';

const PAGE_MEMORY_MB = 256;
const BOMBS_PER_ATTACKER = 2;

const fixtures = new FixtureServer({
  '/page': html('<html><head><title>Fixture</title></head><body><p>hi</p></body></html>'),
  '/bomb': html(
    '<html><head><title>bomb</title></head><body><script>const k = []; for (;;) k.push(new Uint8Array(16 << 20).fill(1))</script></body></html>',
  ),
});

let svc: TestService;
before(async () => {
  await fixtures.start();
  svc = await startTestService({
    EGRESS_ALLOWLIST: fixtures.allowEntry,
    PAGE_MEMORY_MB: String(PAGE_MEMORY_MB),
    MAX_CONCURRENCY: '3',
    // What ends each bomb is the page memory limit, never a deadline.
    SCRIPT_TIMEOUT_MS: '60000',
    NAVIGATION_TIMEOUT_MS: '30000',
    IDLE_SLOT_CLOSE_MS: '0',
  });
});
after(async () => {
  await svc.close();
  await fixtures.close();
});

test('page-memory bombs in a row in two slots: each is 400, the neighbour in the third slot is served throughout', async () => {
  await until(() => svc.service.browser.ready, 'a slot to be ready', { timeoutMs: 60_000 });
  // The order replies arrive in: what the neighbour got while the bombs went off.
  const events: string[] = [];
  let bombsDone = 0;
  const attacker = async (name: string): Promise<Reply[]> => {
    const out: Reply[] = [];
    for (let i = 0; i < BOMBS_PER_ATTACKER; i++) {
      const r = await svc.post({
        url: fixtures.url('/bomb'),
        script: 'return await page.title()',
      });
      events.push(`${name} bomb ${i}: ${r.status}`);
      out.push(r);
    }
    bombsDone++;
    return out;
  };
  const neighbour = async (): Promise<Reply[]> => {
    const out: Reply[] = [];
    // Until both attackers are done, and at least once after.
    for (let last = false; !last;) {
      last = bombsDone === 2;
      const r = await svc.post({ url: fixtures.url('/page'), script: 'return await page.title()' });
      events.push(`neighbour: ${r.status}`);
      out.push(r);
    }
    return out;
  };
  const [a, b, n] = await Promise.all([attacker('a'), attacker('b'), neighbour()]);
  for (const r of [...a, ...b]) {
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'MEMORY_LIMIT_EXCEEDED', r.text);
    assert.equal(r.body.error, `Memory limit exceeded: the page used more than ${PAGE_MEMORY_MB} MiB (PAGE_MEMORY_MB)`);
  }
  for (const r of n) {
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data, 'Fixture');
  }
  // Served while the bombs went off: a reply of the neighbour's arrived before the last bomb's.
  const lastBomb = events.map((e) => e.includes('bomb')).lastIndexOf(true);
  const firstNeighbour = events.findIndex((e) => e.startsWith('neighbour'));
  assert.ok(firstNeighbour < lastBomb, events.join('\n'));
  // Every slot is sound afterwards: three requests at once, each 200.
  const after = await Promise.all(
    [1, 2, 3].map(() => svc.post({ url: fixtures.url('/page'), script: 'return await page.title()' })),
  );
  for (const r of after) assert.equal(r.status, 200, r.text);
});
