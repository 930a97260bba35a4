// PAGE_MEMORY_MB: each way a page (or a script through it) can take memory in
// Chromium ends as 400 MEMORY_LIMIT_EXCEEDED, and the next request is served.
// PAGE_MEMORY_MB is 256 here, so no test takes more than ~0.5 GB; the script
// deadline is long, so that what ends each request is the memory limit. The
// service runs as the suite does (as root: slot processes as their slots' users,
// Chromium in its own sandbox; the headless shell or the full browser, as
// CHROMIUM says), so the watchdog is shown to read and end sandboxed renderers.
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, test, type TestContext } from 'node:test';
import { request } from 'undici';
import { memoryPlan } from '../../../src/common/config.js';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { assertServesNormally, startTestService, type TestService } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';

const PAGE_MEMORY_MB = 256;
const TOKEN = 'metrics-token-0123456789abcdef';
/** Other loopback addresses: other sites, so Chromium gives their frames and popups renderers of their own. */
const OTHER_SITES = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7', '127.0.0.8'];
/** Each frame or popup of another site holds this much. */
const PER_SITE_MB = 48;

/** A page that holds mb MiB of touched memory as long as it lives. */
const HOLDER = (mb: number): string =>
  `<html><head><title>holder</title></head><body><script>window.keep = new Uint8Array(${mb} << 20).fill(7)</script></body></html>`;

const others: { server: Server; origin: string }[] = [];
/** Replies to /hold, held until the test ends them. */
const held: ServerResponse[] = [];
let framesHtml = '';
const fixtures = new FixtureServer({
  '/page': html('<html><head><title>Fixture</title></head><body><p>hi</p></body></html>'),
  '/bomb': html(
    '<html><head><title>bomb</title></head><body><script>const k = []; for (;;) k.push(new Uint8Array(16 << 20).fill(1))</script></body></html>',
  ),
  '/hold': (_req, res) => {
    held.push(res);
  },
  '/frames': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(framesHtml);
  },
  '/popups': html(
    `<html><head><title>popups</title></head><body><button id="open">open</button><script>
      let n = 0;
      document.getElementById('open').onclick = () => { window.open(window.sites[n++ % window.sites.length] + '/big-holder'); };
    </script></body></html>`,
  ),
  '/shared-worker.js': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/javascript' });
    res.end('const keep = []; onconnect = () => { for (;;) keep.push(new Uint8Array(16 << 20).fill(1)); };');
  },
});

let svc: TestService;
before(async () => {
  await fixtures.start();
  for (const ip of OTHER_SITES) {
    const server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      // A popup holds more than the whole limit by itself.
      res.end(HOLDER(req.url === '/big-holder' ? PAGE_MEMORY_MB + 64 : PER_SITE_MB));
    });
    await new Promise<void>((r) => server.listen(0, ip, r));
    const port = (server.address() as { port: number }).port;
    others.push({ server, origin: `http://${ip}:${port}` });
  }
  framesHtml = `<html><head><title>frames</title></head><body>${others
    .map((o) => `<iframe src="${o.origin}/holder"></iframe>`)
    .join('')}</body></html>`;
  fixtures.route(
    '/popups-sites.js',
    html(`window.sites = ${JSON.stringify(others.map((o) => o.origin))}`, 200, { 'content-type': 'text/javascript' }),
  );
  svc = await startTestService({
    EGRESS_ALLOWLIST: [fixtures.allowEntry, ...others.map((o) => o.origin.slice('http://'.length))].join(','),
    PAGE_MEMORY_MB: String(PAGE_MEMORY_MB),
    MAX_CONCURRENCY: '1',
    METRICS_TOKEN: TOKEN,
    SCRIPT_TIMEOUT_MS: '60000',
    NAVIGATION_TIMEOUT_MS: '30000',
  });
});
after(async () => {
  await svc.close();
  for (const o of others) await new Promise<void>((r) => o.server.close(() => r()));
  await fixtures.close();
});

/** A figure of GET /metrics (with the token). */
async function metric(line: RegExp): Promise<number> {
  const r = await request(`${svc.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const m = line.exec(await r.body.text());
  assert.ok(m?.[1], `${String(line)} in /metrics`);
  return Number(m[1]);
}

/** Runs the script, expects the page memory limit, and then a normal request. */
async function assertPageMemoryLimit(t: TestContext, script: string, url = fixtures.url('/page')): Promise<void> {
  const t0 = Date.now();
  const r = await svc.post({ url, script });
  t.diagnostic(`ended after ${Date.now() - t0} ms`);
  assert.equal(r.status, 400, r.text);
  assert.equal(r.body.code, 'MEMORY_LIMIT_EXCEEDED', r.text);
  assert.equal(r.body.error, `Memory limit exceeded: the page used more than ${PAGE_MEMORY_MB} MiB (PAGE_MEMORY_MB)`);
  await assertServesNormally(svc, fixtures.url('/page'), 'Fixture');
}

describe('page memory over PAGE_MEMORY_MB is 400 MEMORY_LIMIT_EXCEEDED, and the next request is served', () => {
  test('the page JavaScript heap', async (t) => {
    await assertPageMemoryLimit(
      t,
      'await page.evaluate(() => { const a = []; for (;;) a.push(new Array(1e5).fill(Math.random())) }); return 1',
    );
  });

  test('typed arrays in the page; the memory is given back and counted in /metrics', async (t) => {
    // The slot processes report every second: the previous test's kill may not be in /metrics yet (it was not,
    // once requests got faster). The count from before is the one that held over more than a report's interval.
    let kills = await metric(/^pagescript_page_memory_kills_total (\d+)$/m);
    let heldSince = Date.now();
    await until(async () => {
      const now = await metric(/^pagescript_page_memory_kills_total (\d+)$/m);
      if (now !== kills) [kills, heldSince] = [now, Date.now()];
      return Date.now() - heldSince > 1_500;
    }, 'the kills counted so far to be reported');
    await assertPageMemoryLimit(
      t,
      'await page.evaluate(() => { const a = []; for (;;) a.push(new Uint8Array(16 << 20).fill(1)) }); return 1',
    );
    // The slot processes report every second.
    await until(
      async () => (await metric(/^pagescript_page_memory_kills_total (\d+)$/m)) === kills + 1,
      'the kill to be counted',
    );
    // The slot's Chromium is back near its size at rest (~150-300 MB), far under what the page held.
    await until(
      async () => (await metric(/^pagescript_memory_in_use_bytes\{process="chromium"\} (\d+)$/m)) < 2 ** 20 * 400,
      "Chromium's memory to go back",
    );
  });

  test('a page that takes the memory as it loads, with no script (the reachability check)', async (t) => {
    const t0 = Date.now();
    const r = await svc.post({ url: fixtures.url('/bomb') });
    t.diagnostic(`ended after ${Date.now() - t0} ms`);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'MEMORY_LIMIT_EXCEEDED', r.text);
    await assertServesNormally(svc, fixtures.url('/page'), 'Fixture');
  });

  test('canvases', async (t) => {
    await assertPageMemoryLimit(
      t,
      `await page.evaluate(() => {
        const keep = [];
        for (;;) {
          const c = document.createElement('canvas');
          c.width = 2000; c.height = 2000;
          const g = c.getContext('2d');
          g.fillStyle = 'red'; g.fillRect(0, 0, 2000, 2000);
          g.getImageData(0, 0, 1, 1);
          keep.push(c);
        }
      }); return 1`,
    );
  });

  test('WebAssembly memory', async (t) => {
    await assertPageMemoryLimit(
      t,
      `await page.evaluate(() => {
        const m = new WebAssembly.Memory({ initial: 1, maximum: 65536 });
        for (;;) { const at = m.buffer.byteLength; m.grow(256); new Uint8Array(m.buffer, at).fill(1); }
      }); return 1`,
    );
  });

  test('many DOM nodes', async (t) => {
    await assertPageMemoryLimit(
      t,
      `await page.evaluate(() => {
        const text = 'x'.repeat(200);
        for (;;) for (let i = 0; i < 10000; i++) document.body.appendChild(document.createElement('div')).setAttribute('data-x', text + i);
      }); return 1`,
    );
  });

  test('decoded images', async (t) => {
    await assertPageMemoryLimit(
      t,
      `await page.evaluate(async () => {
        const c = document.createElement('canvas');
        c.width = 2000; c.height = 2000;
        c.getContext('2d').fillRect(0, 0, 10, 10);
        const png = await new Promise((r) => c.toBlob(r));
        c.width = 1;
        const keep = [];
        for (;;) keep.push(await createImageBitmap(png));
      }); return 1`,
    );
  });

  test('frames of other loopback sites, each in a renderer of its own', async (t) => {
    // The page is kept open after it loads: the frames hold their memory only as long as it lives, and a
    // request that ended at once could finish between two samples of the watchdog (seen once in CI: 200).
    await assertPageMemoryLimit(
      t,
      'await page.goto(targetUrl.replace("/page", "/frames")); await new Promise(() => {}); return 1',
    );
  });

  test('a popup of another site, in a renderer of its own (the headless shell opens none)', async (t) => {
    if (svc.service.config.chromium === 'shell') {
      // --block-new-web-contents: the shell opens no popup, so a popup holds no memory.
      const r = await svc.post({
        url: fixtures.url('/popups'),
        script: `await page.addScriptTag({ url: targetUrl.replace('/popups', '/popups-sites.js') });
          return await page.evaluate(() => window.open(window.sites[0] + '/big-holder') === null)`,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data, true, 'window.open opened nothing');
      return;
    }
    // One click: one user activation, one popup (the popup blocker stays on).
    await assertPageMemoryLimit(
      t,
      `await page.addScriptTag({ url: targetUrl.replace('/popups', '/popups-sites.js') });
       await page.click('#open');
       await new Promise(() => {});`,
      fixtures.url('/popups'),
    );
  });

  test('a dedicated worker', async (t) => {
    await assertPageMemoryLimit(
      t,
      `await page.evaluate(() => new Promise(() => {
        const src = 'const keep = []; for (;;) keep.push(new Uint8Array(16 << 20).fill(1));';
        window.w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })));
      })); return 1`,
    );
  });

  test('a shared worker', async (t) => {
    await assertPageMemoryLimit(
      t,
      `await page.evaluate(() => new Promise(() => { window.w = new SharedWorker('/shared-worker.js'); w.port.start(); }));
       return 1`,
    );
  });

  test('blob URLs (held by the browser process)', async (t) => {
    await assertPageMemoryLimit(
      t,
      `await page.evaluate(async () => {
        const urls = [];
        for (;;) { urls.push(URL.createObjectURL(new Blob([new Uint8Array(16 << 20).fill(1)]))); await new Promise((r) => setTimeout(r, 0)); }
      }); return 1`,
    );
  });

  test('IndexedDB (held by the browser side in an incognito context)', async (t) => {
    await assertPageMemoryLimit(
      t,
      `await page.evaluate(async () => {
        const db = await new Promise((ok, ko) => { const r = indexedDB.open('bomb', 1); r.onupgradeneeded = () => r.result.createObjectStore('s'); r.onsuccess = () => ok(r.result); r.onerror = () => ko(r.error); });
        for (let i = 0; ; i++) {
          // Random bytes: IndexedDB compresses what it stores.
          const value = new Uint8Array(8 << 20);
          for (let o = 0; o < value.length; o += 65536) crypto.getRandomValues(value.subarray(o, o + 65536));
          await new Promise((ok, ko) => { const tx = db.transaction('s', 'readwrite'); tx.objectStore('s').put(value, i); tx.oncomplete = ok; tx.onerror = () => ko(tx.error); });
        }
      }); return 1`,
    );
  });

  test('Cache Storage (held by the browser side in an incognito context)', async (t) => {
    await assertPageMemoryLimit(
      t,
      `await page.evaluate(async () => {
        const cache = await caches.open('bomb');
        for (let i = 0; ; i++) await cache.put('/k' + i, new Response(new Uint8Array(8 << 20).fill(i & 255)));
      }); return 1`,
    );
  });
});

test('/health shows the memory budget to all, and what is in use only with the metrics token', async () => {
  const open = await svc.raw('GET', '/health');
  const memory = open.body.memory as Record<string, number>;
  assert.equal(memory.pageLimitMb, PAGE_MEMORY_MB);
  assert.equal(memory.serviceMb, svc.service.config.serviceMemoryMb);
  assert.equal(memory.maxConcurrency, 1);
  assert.equal(memory.inUseMb, undefined);
  const trusted = await svc.raw('GET', '/health', { headers: { authorization: `Bearer ${TOKEN}` } });
  const use = trusted.body.memory as Record<string, number>;
  assert.ok(use.inUseMb !== undefined && use.inUseMb > 0);
  assert.ok((use.chromiumMb ?? 0) > 0, 'the slot processes report their Chromium');
  assert.ok((use.slotsMb ?? 0) > 0);
  assert.equal(use.executorsMb, use.slotsMb, 'the deprecated name, for one release');
});

describe('the service memory ceiling', () => {
  test('a request that would not fit in SERVICE_MEMORY_MB waits in the queue; /health shows budget and use', async () => {
    const shape = {
      chromium: svc.service.config.chromium,
      pageMemoryMb: 256,
      scriptMemoryMb: 64,
      maxResultBytes: svc.service.config.maxResultBytes,
    };
    const one = memoryPlan({ ...shape, concurrency: 1 });
    // Room for one request only, although MAX_CONCURRENCY asks for four.
    const serviceMb = memoryPlan({ ...shape, concurrency: 2 }).plannedMb - 1;
    const own = await startTestService({
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      PAGE_MEMORY_MB: '256',
      SCRIPT_MEMORY_MB: '64',
      SERVICE_MEMORY_MB: String(serviceMb),
      MAX_CONCURRENCY: '4',
      METRICS_TOKEN: TOKEN,
      SCRIPT_TIMEOUT_MS: '30000',
    });
    const auth = { headers: { authorization: `Bearer ${TOKEN}` } };
    const health = async (): Promise<Record<string, unknown>> => (await own.raw('GET', '/health', auth)).body;
    try {
      assert.equal(own.service.config.maxConcurrency, 1);
      assert.equal(own.service.config.maxConcurrencyAsked, 4);
      assert.equal(own.service.browser.pids.length, 1, 'one slot: one Chromium');
      const slow = own.post({
        url: fixtures.url('/page'),
        script: "return await page.evaluate(() => fetch('/hold').then((r) => r.text()))",
      });
      await until(() => held.length === 1, 'the first request to reach /hold');
      const second = own.post({ url: fixtures.url('/page'), script: 'return 2' });
      await until(async () => (await health()).queued === 1, 'the second to wait');
      const memory = (await health()).memory as Record<string, number>;
      assert.equal(memory.serviceMb, serviceMb);
      assert.equal(memory.plannedMb, one.plannedMb);
      assert.equal(memory.perRequestMb, one.perRequestMb);
      assert.equal(memory.reservedMb, one.plannedMb, 'the one slot is taken');
      assert.equal(memory.maxConcurrency, 1);
      for (const res of held.splice(0)) res.end('1');
      const [first, next] = [await slow, await second];
      assert.equal(first.status, 200, first.text);
      assert.deepEqual([first.body.data, next.body.data], ['1', 2]);
    } finally {
      for (const res of held.splice(0)) res.end('');
      await own.close();
    }
  });
});
