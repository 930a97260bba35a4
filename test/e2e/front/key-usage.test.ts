// Hosting tenants: a key's policy refuses what the key may not ask before any
// page is opened, and every reply after authentication says what the request
// cost; the operator gets one usage record per request and per-key counters.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { hashKey, writeKeyFile } from '../../../src/front/tenancy/keyfile.js';
import { USAGE_HEADER_NAMES } from '../../../src/front/usage.js';
import puppeteer from 'puppeteer';
import { chooseChromium } from '../../../src/common/config.js';
import { treeCpuMs } from '../../../src/common/proc.js';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { startTestService, type TestService } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';

const run = promisify(execFile);
const PAGE = html(`<title>shop</title><p>${'x'.repeat(20_000)}</p>`);
const shop = new FixtureServer({ '/item': PAGE });
const other = new FixtureServer({
  '/item': PAGE,
  '/img': html('img'),
  '/frame': html('frame'),
  '/fetch': html('fetched'),
});
const dir = mkdtempSync(join(tmpdir(), 'pagescript-usage-'));
const keyFile = join(dir, 'keys.json');
const usageFile = join(dir, 'usage.jsonl');
const ACME = 'ps_acme_0123456789abcdefghijklmnopqrstuv';
const FREE = 'ps_free_0123456789abcdefghijklmnopqrstuv';
const QUICK = 'ps_quick_0123456789abcdefghijklmnopqrstu';
const LEAN = 'ps_lean_0123456789abcdefghijklmnopqrstuv';
let svc: TestService;

before(async () => {
  await shop.start();
  await other.start();
  writeKeyFile(keyFile, {
    version: 1,
    keys: [
      {
        name: 'acme',
        sha256: hashKey(ACME),
        active: true,
        policy: { hosts: [`127.0.0.1:${shop.port}`], options: ['viewport'], outputFormats: ['json'] },
      },
      { name: 'free', sha256: hashKey(FREE), active: true },
      { name: 'quick', sha256: hashKey(QUICK), active: true, policy: { scriptTimeoutMs: 1000 } },
      { name: 'lean', sha256: hashKey(LEAN), active: true, policy: { scriptMemoryMb: 32, pageMemoryMb: 64 } },
    ],
  });
  svc = await startTestService({
    EGRESS_ALLOWLIST: `${shop.allowEntry},${other.allowEntry}`,
    API_KEYS_FILE: keyFile,
    USAGE_LOG: usageFile,
    // Pages here burn CPU and fill memory on purpose: on a loaded machine that takes a while.
    SCRIPT_TIMEOUT_MS: '30000',
    NAVIGATION_TIMEOUT_MS: '30000',
  });
});
after(async () => {
  await svc?.close();
  await shop.close();
  await other.close();
  rmSync(dir, { recursive: true, force: true });
});

const as = (key: string) => ({ 'x-gateway-key': key });

test("a URL outside the key's hosts is 400 SCRAPING_FAILED before any page is opened; another key may load it", async () => {
  const before = other.hits.get('/item') ?? 0;
  const r = await svc.post({ url: `${other.url()}item?secret=1`, script: 'return 1' }, as(ACME));
  assert.equal(r.status, 400);
  assert.equal(r.body.code, 'SCRAPING_FAILED');
  assert.match(String(r.body.error), /is outside this key's hosts/);
  assert.equal(other.hits.get('/item') ?? 0, before, 'no page was opened');
  const ok = await svc.post({ url: `${other.url()}item`, script: 'return await page.title()' }, as(FREE));
  assert.equal(ok.status, 200, ok.text);
});

test("the guard refuses the page's own connections outside its key's hosts: subresources, frames, fetches, redirects", async () => {
  shop.route('/mixed', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(
      `<img src="${other.url('/img')}"><iframe src="${other.url('/frame')}"></iframe>` +
        `<script>fetch(${JSON.stringify(other.url('/fetch'))}).catch(() => {})</script>`,
    );
  });
  shop.route('/away', (_req, res) => {
    res.writeHead(302, { location: other.url('/item') });
    res.end();
  });
  const hits = (): number => ['/img', '/frame', '/fetch', '/item'].reduce((n, p) => n + (other.hits.get(p) ?? 0), 0);
  const before = hits();
  const script = 'await new Promise((r) => setTimeout(r, 300)); return await page.title()';
  const mixed = await svc.post(
    { url: shop.url('/mixed'), script, options: { viewport: { width: 800, height: 600 } } },
    as(ACME),
  );
  assert.equal(mixed.status, 200, mixed.text);
  const away = await svc.post({ url: shop.url('/away'), script: 'return page.url()' }, as(ACME));
  assert.equal(away.status, 400, away.text);
  assert.equal(away.body.code, 'SCRAPING_FAILED');
  // The failure details name what the guard refused for the key's hosts.
  assert.deepEqual(away.body.refusedHosts, [`127.0.0.1:${other.port}`]);
  assert.equal(hits(), before, 'nothing of the key reached the other host');
  // Control: the same page for a key without hosts reaches the other host.
  const free = await svc.post({ url: shop.url('/mixed'), script }, as(FREE));
  assert.equal(free.status, 200, free.text);
  await until(() => hits() > before, 'the other key to reach the other host');
});

test("a key's lower script limit ends its request where the service's would not; another key's same request succeeds", async () => {
  const script = 'await new Promise((r) => setTimeout(r, 2500)); return "slept"';
  const quick = await svc.post({ url: shop.url('/item'), script }, as(QUICK));
  assert.equal(quick.status, 400, quick.text);
  assert.equal(quick.body.code, 'SCRAPING_FAILED');
  assert.match(String(quick.body.error), /timed out after 1000 ms/);
  const free = await svc.post({ url: shop.url('/item'), script }, as(FREE));
  assert.equal(free.status, 200, free.text);
});

/** Holds ~64 MB in the isolate (80 arrays of 100,000 small integers) until the reply. */
const ISOLATE_HOG =
  'const a = []; for (let i = 0; i < 80; i++) a.push(new Array(1e5).fill(i)); globalThis.keep = a; return a.length';
/** Holds 150 MB in the page (each 4 KiB page of it written), then waits for the page memory watchdog's readings (every 100 ms). */
const PAGE_HOG =
  'await page.evaluate(() => { window.keep = []; for (let i = 0; i < 15; i++) { const a = new Uint8Array(10 * 2 ** 20); for (let j = 0; j < a.length; j += 4096) a[j] = 1; window.keep.push(a); } });' +
  ' await new Promise((r) => setTimeout(r, 1500)); return "held"';
const mib = (r: { headers: Record<string, unknown> }, h: string): number => Number(r.headers[h] ?? Number.NaN);

test("a key's lower script memory ends its request with MEMORY_LIMIT_EXCEEDED; another key's same request succeeds", async () => {
  const lean = await svc.post({ url: shop.url('/item'), script: ISOLATE_HOG }, as(LEAN));
  assert.equal(lean.status, 400, lean.text);
  assert.equal(lean.body.code, 'MEMORY_LIMIT_EXCEEDED');
  // Ended at its limit: that is what it held at the most.
  assert.ok(mib(lean, 'x-usage-isolate-heap-peak-mib') >= 32, String(lean.headers['x-usage-isolate-heap-peak-mib']));
  // SECURITY: and not past it: the slot process's own young-generation bound must not widen its isolates' (young-generation.ts).
  assert.ok(mib(lean, 'x-usage-isolate-heap-peak-mib') < 40, String(lean.headers['x-usage-isolate-heap-peak-mib']));
  const free = await svc.post({ url: shop.url('/item'), script: ISOLATE_HOG }, as(FREE));
  assert.equal(free.status, 200, free.text);
  assert.equal(free.body.data, 80);
});

test("a key's lower page memory ends its request with MEMORY_LIMIT_EXCEEDED; another key's same request succeeds", async () => {
  const lean = await svc.post({ url: shop.url('/item'), script: PAGE_HOG }, as(LEAN));
  assert.equal(lean.status, 400, lean.text);
  assert.equal(lean.body.code, 'MEMORY_LIMIT_EXCEEDED');
  assert.equal(lean.body.error, "Memory limit exceeded: the page used more than 64 MiB (this key's page memory limit)");
  // At the limit at least: where the kernel holds it (slot cgroups) the page never gets past it; the watchdog sees it past.
  assert.ok(mib(lean, 'x-usage-page-memory-peak-mib') >= 64, String(lean.headers['x-usage-page-memory-peak-mib']));
  const free = await svc.post({ url: shop.url('/item'), script: PAGE_HOG }, as(FREE));
  assert.equal(free.status, 200, free.text);
  assert.equal(free.body.data, 'held');
});

test('the peaks of page memory and isolate heap are on the reply: what the request held, not a constant', async () => {
  const page = await svc.post({ url: shop.url('/item'), script: PAGE_HOG }, as(FREE));
  assert.equal(page.status, 200, page.text);
  const isolate = await svc.post({ url: shop.url('/item'), script: ISOLATE_HOG }, as(FREE));
  assert.equal(isolate.status, 200, isolate.text);
  const small = await svc.post({ url: shop.url('/item'), script: 'return 1' }, as(FREE));
  assert.equal(small.status, 200, small.text);
  // 150 MB held by the page (143 MiB); 64 MB by the isolate (61 MiB).
  assert.ok(mib(page, 'x-usage-page-memory-peak-mib') >= 120, String(page.headers['x-usage-page-memory-peak-mib']));
  assert.ok(
    mib(isolate, 'x-usage-isolate-heap-peak-mib') >= 50,
    String(isolate.headers['x-usage-isolate-heap-peak-mib']),
  );
  assert.ok(mib(small, 'x-usage-page-memory-peak-mib') < 120, String(small.headers['x-usage-page-memory-peak-mib']));
  assert.ok(mib(small, 'x-usage-isolate-heap-peak-mib') < 50, String(small.headers['x-usage-isolate-heap-peak-mib']));
  // The reachability check has a page and no isolate.
  const check = await svc.post({ url: shop.url('/item') }, as(FREE));
  assert.equal(check.status, 200, check.text);
  assert.ok(mib(check, 'x-usage-page-memory-peak-mib') >= 0);
  assert.equal(check.headers['x-usage-isolate-heap-peak-mib'], undefined);
});

test('an option or output format the key may not use is 400 INVALID_OPTIONS naming it', async () => {
  const opt = await svc.post({ url: `${shop.url()}item`, options: { screenshotOnError: true } }, as(ACME));
  assert.equal(opt.status, 400);
  assert.equal(opt.body.code, 'INVALID_OPTIONS');
  assert.match(String(opt.body.error), /options\.screenshotOnError is not allowed for this key/);
  const fmt = await svc.post({ url: `${shop.url()}item`, outputFormat: 'html' }, as(ACME));
  assert.equal(fmt.body.code, 'INVALID_OPTIONS');
  assert.match(String(fmt.body.error), /outputFormat "html" is not allowed/);
});

test('every reply after authentication says what the request cost; a 401 does not', async () => {
  const ok = await svc.post({ url: `${shop.url()}item`, script: 'return await page.title()' }, as(ACME));
  assert.equal(ok.status, 200, ok.text);
  assert.ok(Number(ok.headers['x-usage-wall-ms']) >= 0);
  assert.ok(Number(ok.headers['x-usage-queue-ms']) >= 0);
  // What the fixture served went through the guard: at least the page's body.
  assert.ok(Number(ok.headers['x-usage-bytes-received']) >= 20_000, String(ok.headers['x-usage-bytes-received']));
  assert.ok(Number(ok.headers['x-usage-connections']) >= 1);
  const failed = await svc.post({ url: `${shop.url()}item`, script: 'throw new Error("boom")' }, as(ACME));
  assert.equal(failed.status, 400);
  assert.ok(failed.headers['x-usage-wall-ms'] !== undefined, 'a failed request is billed too');
  for (const h of ['x-usage-cpu-ms', 'x-usage-page-memory-peak-mib', 'x-usage-isolate-heap-peak-mib']) {
    assert.match(String(ok.headers[h]), /^\d+(\.\d)?$/, h);
    assert.match(String(failed.headers[h]), /^\d+(\.\d)?$/, h);
  }
  const denied = await svc.post({ url: `${shop.url()}item` }, as('ps_not_a_key_0123456789abcdefghijkl'));
  assert.equal(denied.status, 401);
  for (const h of USAGE_HEADER_NAMES) assert.equal(denied.headers[h.toLowerCase()], undefined, h);
});

/** A page that burns CPU as it loads (its title is the loop's result). */
const BURN_PAGE =
  '<title>burn</title><script>let x = 0; for (let i = 0; i < 1e8; i++) x = (x + i * 7) % 1000003; document.title = String(x);</script>';

/** The CPU raw Chromium (no service, no guard) spends loading `url`: its process tree's, from the kernel. */
async function rawChromiumCpuMs(url: string): Promise<number> {
  const { executablePath } = chooseChromium(process.env, []);
  const browser = await puppeteer.launch({
    executablePath,
    headless: true,
    pipe: true,
    args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '--disable-gpu'],
  });
  try {
    const page = await browser.newPage();
    const pid = browser.process()?.pid as number;
    const before = treeCpuMs(pid) as number;
    await page.goto(url, { timeout: 60_000 });
    return (treeCpuMs(pid) as number) - before;
  } finally {
    await browser.close();
  }
}

test("the CPU figure is the kernel's count: a page that burns CPU reports at least half what raw Chromium uses for it, a blank page less", async () => {
  shop.route('/burn', html(BURN_PAGE));
  const raw = await rawChromiumCpuMs(shop.url('/burn'));
  // The blank page first: a renderer that exits after its request's reply is counted when its parent
  // reaps it, which may fall in the next request's window (docs/keys-and-limits.md).
  const blank = await svc.post({ url: shop.url('/item'), script: 'return 1' }, as(FREE));
  assert.equal(blank.status, 200, blank.text);
  const busy = await svc.post({ url: shop.url('/burn'), script: 'return await page.title()' }, as(FREE));
  assert.equal(busy.status, 200, busy.text);
  const busyMs = Number(busy.headers['x-usage-cpu-ms']);
  const blankMs = Number(blank.headers['x-usage-cpu-ms']);
  assert.ok(busyMs >= raw / 2, `the service counted ${busyMs} ms; raw Chromium used ${raw} ms`);
  assert.ok(blankMs < raw, `blank page ${blankMs} ms; raw Chromium on the busy page ${raw} ms`);
});

test('one usage record per request, with no script, key or query string; npm run key -- usage sums them', async () => {
  const script = 'return "marker-" + "in-script"';
  const r = await svc.post({ url: `${shop.url()}item?token=query-secret`, script }, as(ACME));
  assert.equal(r.status, 200, r.text);
  const requestId = String(r.headers['x-request-id']);
  await until(() => readFileSync(usageFile, 'utf8').includes(requestId), 'the usage record');
  const text = readFileSync(usageFile, 'utf8');
  const records = text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(new Set(records.map((x) => x.requestId)).size, records.length, 'one line per request');
  const mine = records.find((x) => x.requestId === requestId);
  assert.equal(mine?.key, 'acme');
  assert.equal(mine?.code, 'OK');
  assert.equal(typeof mine?.pageMemoryPeakMb, 'number');
  assert.equal(typeof mine?.isolateHeapPeakMb, 'number');
  assert.equal(typeof mine?.cpuMs, 'number');
  for (const secret of ['marker-', 'query-secret', ACME, FREE, hashKey(ACME)])
    assert.ok(!text.includes(secret), `the records hold no ${secret.slice(0, 12)}`);
  const acme = records.filter((x) => x.key === 'acme');
  const { stdout } = await run(
    process.execPath,
    [
      '--import',
      'tsx',
      'scripts/key.ts',
      'usage',
      '--name',
      'acme',
      '--usage-file',
      usageFile,
      '--since',
      '2000-01-01',
    ],
    { env: process.env },
  );
  const sum = JSON.parse(stdout) as { requests: number; byCode: Record<string, number>; bytesReceived: number };
  assert.equal(sum.requests, acme.length);
  assert.equal(sum.byCode.OK, acme.filter((x) => x.code === 'OK').length);
  assert.equal(
    sum.bytesReceived,
    acme.reduce((n, x) => n + (typeof x.bytesReceived === 'number' ? x.bytesReceived : 0), 0),
  );
});

test('/metrics counts requests, bytes and browser time per key name', async () => {
  const r = await svc.post({ url: `${shop.url()}item`, script: 'return 1' }, as(ACME));
  assert.equal(r.status, 200, r.text);
  const m = await svc.raw('GET', '/metrics');
  assert.match(m.text, /pagescript_key_requests_total\{key="acme",code="OK"\} [1-9]/);
  assert.match(m.text, /pagescript_key_bytes_total\{key="acme",direction="received"\} [1-9]/);
  assert.match(m.text, /pagescript_key_browser_seconds_total\{key="acme"\} [0-9.e-]+/);
  assert.doesNotMatch(m.text, /ps_acme_/);
});
