// The request's `options` (docs/api.md "Request options"), end to end on loopback
// fixtures: each option is applied before the first navigation (the fixture
// sees the first request, and the page's own inline script sees the set-up as
// it loads), and each refusal is a 400 INVALID_OPTIONS naming the field.
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, test } from 'node:test';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { serviceFor } from '../../helpers/service.js';

/** The headers of the first request for each path. */
const firstHeaders = new Map<string, IncomingHttpHeaders>();

/** What the page's inline script saw while it loaded. */
const PROBE = `<!doctype html><html><head><title>static</title>
<script>
  window.probe = {
    width: innerWidth,
    height: innerHeight,
    print: matchMedia('print').matches,
    language: navigator.language,
    intlLocale: Intl.NumberFormat().resolvedOptions().locale,
    timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    userAgent: navigator.userAgent,
  };
  document.title = 'js-ran';
</script></head><body><p id="p">probe</p></body></html>`;

/** A page with an image, a font, a stylesheet and a media file, each at a path unique to `tag`. */
function assetsPage(tag: string): string {
  return `<!doctype html><html><head><title>assets</title>
<link rel="stylesheet" href="/${tag}/style.css">
<style>@font-face { font-family: F; src: url(/${tag}/font.woff2); } p { font-family: F; }</style>
</head><body><p>text in the font</p><img src="/${tag}/pixel.png"><video src="/${tag}/clip.mp4" preload="auto"></video></body></html>`;
}

const fixtures = new FixtureServer({
  '/probe': (req, res) => {
    if (!firstHeaders.has(req.url ?? '')) firstHeaders.set(req.url ?? '', req.headers);
    html(PROBE)(req, res);
  },
  '/late': html(
    '<title>Late</title><script>setTimeout(() => { const d = document.createElement("div"); d.id = "late"; document.body.appendChild(d) }, 300)</script>',
  ),
  '/stalled-image': html('<title>Stalled</title><img src="/never">'),
  // Headers, then nothing: the image never finishes, so "load" never comes.
  '/never': (_req, res) => {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.write('');
  },
});
for (const tag of ['blocked', 'control']) fixtures.route(`/${tag}`, html(assetsPage(tag)));
const svc = serviceFor(fixtures, { SCRIPT_TIMEOUT_MS: '10000' });

/** A unique /probe URL, so each test reads the headers of its own first request. */
let probes = 0;
function probeUrl(): string {
  return fixtures.url(`/probe?n=${++probes}`);
}

const PROBE_SCRIPT = 'return await page.evaluate(() => window.probe)';

async function probe(options: Record<string, unknown>): Promise<{ data: Record<string, unknown>; url: string }> {
  const url = probeUrl();
  const r = await svc.post({ url, script: PROBE_SCRIPT, options });
  assert.equal(r.status, 200, r.text);
  return { data: r.body.data as Record<string, unknown>, url: new URL(url).pathname + new URL(url).search };
}

async function refused(options: unknown, field: string): Promise<void> {
  const r = await svc.post({ url: probeUrl(), script: 'return 1', options });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.body.code, 'INVALID_OPTIONS');
  const message = String(r.body.error);
  const prefix = `Invalid options: ${field}`;
  assert.ok(message.startsWith(prefix) && /^[\s:]/.test(message.slice(prefix.length)), message);
}

describe('options applied before the page loads', () => {
  test('viewport is the page size while it first loads', async () => {
    const { data } = await probe({ viewport: { width: 500, height: 300 } });
    assert.equal(data.width, 500);
    assert.equal(data.height, 300);
  });

  test('userAgent is sent with the first request and seen by the page', async () => {
    const { data, url } = await probe({ userAgent: 'PagescriptTest/1.0' });
    assert.equal(firstHeaders.get(url)?.['user-agent'], 'PagescriptTest/1.0');
    assert.equal(data.userAgent, 'PagescriptTest/1.0');
  });

  test('extraHTTPHeaders are sent with the first request', async () => {
    const { url } = await probe({ extraHTTPHeaders: { 'X-Custom': 'on', Authorization: 'Bearer abc' } });
    assert.equal(firstHeaders.get(url)?.['x-custom'], 'on');
    assert.equal(firstHeaders.get(url)?.authorization, 'Bearer abc');
  });

  test("cookies for the target's host are sent with the first request", async () => {
    const { url } = await probe({ cookies: [{ name: 'session', value: 'abc' }] });
    assert.equal(firstHeaders.get(url)?.cookie, 'session=abc');
  });

  test('blocked images, fonts, stylesheets and media are never requested', async () => {
    const r = await svc.post({
      url: fixtures.url('/blocked'),
      script: 'return await page.title()',
      options: { blockResourceTypes: ['image', 'font', 'stylesheet', 'media'] },
    });
    assert.equal(r.status, 200, r.text);
    for (const asset of ['pixel.png', 'font.woff2', 'style.css', 'clip.mp4'])
      assert.equal(fixtures.hits.get(`/blocked/${asset}`) ?? 0, 0, asset);
    assert.equal(fixtures.hits.get('/blocked'), 1, 'control: the page itself was requested');
  });

  test('without blockResourceTypes the same page requests its image, font and stylesheet (the fixture counts)', async () => {
    // The font is fetched once the text is laid out, which may come after load: the script asks for it (the
    // fixture's bytes are no font, so the load fails once fetched).
    const r = await svc.post({
      url: fixtures.url('/control'),
      script: "await page.evaluate(() => document.fonts.load('16px F').catch(() => 0)); return await page.title()",
    });
    assert.equal(r.status, 200, r.text);
    for (const asset of ['pixel.png', 'font.woff2', 'style.css'])
      assert.equal(fixtures.hits.get(`/control/${asset}`), 1, asset);
  });

  test("javaScriptEnabled: false keeps the page's scripts from running", async () => {
    const r = await svc.post({
      url: probeUrl(),
      script: 'return await page.title()',
      options: { javaScriptEnabled: false },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data, 'static');
  });

  test('waitUntil domcontentloaded returns while an image still loads', async () => {
    const r = await svc.post({
      url: fixtures.url('/stalled-image'),
      script: 'return await page.title()',
      options: { waitUntil: 'domcontentloaded' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data, 'Stalled');
  });

  test('navigationTimeoutMs ends a navigation that waits for "load" on a stalled image', async () => {
    const r = await svc.post({
      url: fixtures.url('/stalled-image'),
      script: 'return 1',
      options: { navigationTimeoutMs: 700 },
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'SCRAPING_FAILED');
    assert.match(String(r.body.error), /700 ms/);
  });

  test('navigationTimeoutMs beyond the server limit is clamped to it, not refused', async () => {
    const r = await svc.post({ url: probeUrl(), script: 'return 1', options: { navigationTimeoutMs: 86_400_000 } });
    assert.equal(r.status, 200, r.text);
  });

  test('waitForSelector waits for an element the page adds after it loads', async () => {
    const r = await svc.post({
      url: fixtures.url('/late'),
      script: "return (await page.$('#late')) !== null",
      options: { waitForSelector: '#late' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data, true);
  });

  test('waitForSelector that never matches fails the navigation within navigationTimeoutMs', async () => {
    const r = await svc.post({
      url: fixtures.url('/late'),
      script: 'return 1',
      options: { waitForSelector: '#never', navigationTimeoutMs: 800 },
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'SCRAPING_FAILED');
    assert.match(String(r.body.error), /options\.waitForSelector "#never"/);
  });

  test('emulateMediaType print is the media type while the page loads', async () => {
    const { data } = await probe({ emulateMediaType: 'print' });
    assert.equal(data.print, true);
  });

  test("locale sets Accept-Language, navigator.language and Intl's locale", async () => {
    const { data, url } = await probe({ locale: 'de-DE' });
    assert.match(String(firstHeaders.get(url)?.['accept-language']), /^de-DE\b/);
    assert.equal(data.language, 'de-DE');
    assert.equal(data.intlLocale, 'de-DE');
  });

  test("timezoneId is the page's time zone while it loads", async () => {
    const { data } = await probe({ timezoneId: 'Asia/Tokyo' });
    assert.equal(data.timeZone, 'Asia/Tokyo');
  });

  test('options apply to the reachability check too (no script)', async () => {
    const url = probeUrl();
    const r = await svc.post({ url, options: { userAgent: 'ReachCheck/2' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(firstHeaders.get(new URL(url).pathname + new URL(url).search)?.['user-agent'], 'ReachCheck/2');
  });

  test('options: null is the same as no options', async () => {
    const r = await svc.post({ url: probeUrl(), script: 'return await page.title()', options: null });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data, 'js-ran');
  });
});

test("a script's page.setExtraHTTPHeaders refuses the Host header as options do", async () => {
  const r = await svc.post({
    url: probeUrl(),
    script:
      "try { await page.setExtraHTTPHeaders({ Host: 'internal.example' }); return 'set' } catch (e) { return e.message }",
  });
  assert.equal(r.status, 200, r.text);
  assert.match(String(r.body.data), /header "Host" cannot be set/);
});

describe('options refused with 400 INVALID_OPTIONS naming the field', () => {
  test('an unknown option', () => refused({ proxy: 'http://10.0.0.1:3128' }, 'options.proxy'));
  test('options that is not an object', () => refused(['viewport'], 'options'));
  test('a viewport beyond the membrane bounds', () =>
    refused({ viewport: { width: 5000, height: 10 } }, 'options.viewport.width'));
  test('a Host header (the guard checked the site by name)', () =>
    refused({ extraHTTPHeaders: { Host: 'internal.example' } }, 'options.extraHTTPHeaders.Host'));
  test('a Proxy-Authorization header', () =>
    refused(
      { extraHTTPHeaders: { 'Proxy-Authorization': 'Basic eA==' } },
      'options.extraHTTPHeaders.Proxy-Authorization',
    ));
  test('a header value with a line break (header injection)', () =>
    refused({ extraHTTPHeaders: { 'X-A': 'a\r\nHost: internal' } }, 'options.extraHTTPHeaders.X-A'));
  test("a cookie for another site than the target's", () =>
    refused({ cookies: [{ name: 'a', value: 'b', domain: 'bank.example' }] }, 'options.cookies[0].domain'));
  test('a cookie with a url of its own (it could name another site)', () =>
    refused({ cookies: [{ name: 'a', value: 'b', url: 'https://bank.example/' }] }, 'options.cookies[0].url'));
  test('blocking the document itself', () =>
    refused({ blockResourceTypes: ['document'] }, 'options.blockResourceTypes[0]'));
  test('a waitForSelector too costly for the membrane', () =>
    refused({ waitForSelector: ':is('.repeat(20) + 'a' + ')'.repeat(20) }, 'options.waitForSelector'));
  test('a bad time zone', () => refused({ timezoneId: 'Mars/Olympus' }, 'options.timezoneId'));
  test('a bad locale', () => refused({ locale: 'not a locale' }, 'options.locale'));
});
