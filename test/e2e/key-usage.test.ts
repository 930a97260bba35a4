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
import { hashKey, writeKeyFile } from '../../src/front/tenancy/keyfile.js';
import { USAGE_HEADER_NAMES } from '../../src/front/usage.js';
import { FixtureServer, html } from '../helpers/fixtures.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { until } from '../helpers/wait.js';

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
    ],
  });
  svc = await startTestService({
    EGRESS_ALLOWLIST: `${shop.allowEntry},${other.allowEntry}`,
    API_KEYS_FILE: keyFile,
    USAGE_LOG: usageFile,
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
  const denied = await svc.post({ url: `${shop.url()}item` }, as('ps_not_a_key_0123456789abcdefghijkl'));
  assert.equal(denied.status, 401);
  for (const h of USAGE_HEADER_NAMES) assert.equal(denied.headers[h.toLowerCase()], undefined, h);
});

test("the CPU figure is the kernel's count for the request's slot process and Chromium: a busy page reports more than a blank one", async () => {
  const burn =
    'return await page.evaluate(() => { let x = 0; for (let i = 0; i < 3e8; i++) x = (x + i * 7) % 1000003; return x; })';
  const busy = await svc.post({ url: shop.url('/item'), script: burn }, as(FREE));
  assert.equal(busy.status, 200, busy.text);
  const blank = await svc.post({ url: shop.url('/item'), script: 'return 1' }, as(FREE));
  assert.equal(blank.status, 200, blank.text);
  const busyMs = Number(busy.headers['x-usage-cpu-ms']);
  const blankMs = Number(blank.headers['x-usage-cpu-ms']);
  // 3e8 steps of the loop are hundreds of ms of a core on any machine this runs on, however loaded.
  assert.ok(busyMs >= 200, `busy page: ${busyMs} ms`);
  assert.ok(blankMs < busyMs, `blank ${blankMs} ms, busy ${busyMs} ms`);
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
