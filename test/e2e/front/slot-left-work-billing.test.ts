// Work a hostile key leaves running in its slot after its job ended, billed to
// the next key's job. A job's CPU is the kernel's count for its slot's groups
// while the job runs (slot-job.ts). Whatever the hostile job leaves spinning in
// the slot (its isolate's thread, stuck in a V8 builtin no termination reaches;
// its page's renderer or worker, spinning as its context closes) must not be
// counted into the next job of the slot, which may be another key's: that key
// would be billed for it (X-Usage-Cpu-Ms).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { TEST_KEY, startTestService, type Reply, type TestService } from '../../helpers/service.js';
import { SLOT_GROUPS_SKIP as skip } from '../../helpers/slot-groups.js';
import { until } from '../../helpers/wait.js';

/** A page that spins in its renderer's main thread and in a worker from its load on. */
const SPIN_PAGE = `<!doctype html><title>spin</title><script>
new Worker(URL.createObjectURL(new Blob(['for (;;) {}'])));
addEventListener('load', () => setTimeout(() => { for (;;) {} }, 20));
</script>`;
const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML), '/spin': html(SPIN_PAGE) });
const HOSTILE = 'ps_hostile_0123456789abcdefghijklmnop';
/** ~100 s of C++ with no interrupt check (test/e2e/front/slot-runaway.test.ts), after a page call. */
const UNSTOPPABLE = 'await page.title(); const a = []; a[2 ** 32 - 2] = 1; a.indexOf(2); return 1';
/** The innocent job: it waits 1.5 s in its page and uses tens of ms of CPU. */
const WAITS = 'await page.evaluate(() => new Promise((r) => setTimeout(r, 1500))); return 1';
/** Well above what the waiting job uses, well below the ~1.5 s of a core a spinner left in its slot adds. */
const MAX_BILLED_MS = 1000;

let svc: TestService;

before(async () => {
  if (skip) return;
  await fixtures.start();
  svc = await startTestService({
    API_KEYS: `${TEST_KEY},${HOSTILE}`,
    EGRESS_ALLOWLIST: fixtures.allowEntry,
    // One slot: the innocent key's job takes the slot the hostile one left.
    MAX_CONCURRENCY: '1',
    SCRIPT_TIMEOUT_MS: '2000',
    NAVIGATION_TIMEOUT_MS: '20000',
    QUEUE_TIMEOUT_MS: '60000',
  });
});

after(async () => {
  if (skip) return;
  await svc?.close();
  await fixtures.close();
});

const hostile = (body: unknown): Promise<Reply> => svc.post(body, { 'x-gateway-key': HOSTILE });

/** The innocent key's job right after the hostile one: answered, and billed only for its own CPU. */
async function innocentAfter(left: Promise<Reply>): Promise<void> {
  // Sent while the hostile job still runs: it is queued for the slot, and takes it as soon as the slot is free.
  await until(() => svc.service.slots.busySlots[0] === true, 'the hostile job to have the slot');
  const innocent = svc.post({ url: fixtures.url('/example'), script: WAITS });
  await left;
  const r = await innocent;
  assert.equal(r.status, 200, r.text);
  const billed = Number(r.headers['x-usage-cpu-ms']);
  assert.ok(billed < MAX_BILLED_MS, `the innocent key was billed ${billed} ms for a job that waited`);
}

describe('work a hostile key leaves in its slot', { skip }, () => {
  test("an isolate stuck in native code after its job: the next key's job is not billed for it", async () => {
    const left = hostile({ url: fixtures.url('/example'), script: UNSTOPPABLE });
    await innocentAfter(
      left.then((r) => {
        assert.equal(r.status, 400, r.text);
        assert.match(String(r.body.error), /timed out after 2000 ms/);
        return r;
      }),
    );
  });

  test("a renderer and a worker spinning as the job's context closes: the next key's job is not billed for them", async () => {
    const left = hostile({ url: fixtures.url('/spin'), script: 'return 1' });
    await innocentAfter(
      left.then((r) => {
        assert.equal(r.status, 200, r.text);
        return r;
      }),
    );
  });
});
