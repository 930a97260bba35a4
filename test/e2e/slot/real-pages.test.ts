// Messy real pages (test/fixtures/real-pages, served offline with a CSP): cheerio in
// the isolate must read them exactly as cheerio in Node does, and the page API
// must work on them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as cheerio from 'cheerio';
import { FixtureServer, realPageNames } from '../../helpers/fixtures.js';
import { serviceFor } from '../../helpers/service.js';

const fixtures = new FixtureServer();
const svc = serviceFor(fixtures, { SCRIPT_TIMEOUT_MS: '15000', MAX_RESULT_BYTES: String(16 * 1024 * 1024) });
const DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'real-pages');

/** The same extraction, as source, for the isolate and (via new Function here, test-only) for Node. */
const EXTRACT = `($) => ({
  title: $('title').first().text().trim(),
  h1: $('h1').map((i, e) => $(e).text().trim()).get().slice(0, 5),
  links: $('a[href]').length,
  firstHrefs: $('a[href]').map((i, e) => $(e).attr('href')).get().slice(0, 10),
  paragraphs: $('p').length,
  textLength: $('body').text().replace(/\\s+/g, ' ').trim().length,
  metas: $('meta[property^="og:"]').map((i, e) => $(e).attr('property')).get(),
})`;

test('there are real pages to test against', () => {
  assert.ok(realPageNames().length >= 10);
});

for (const name of realPageNames()) {
  test(`${name}: cheerio in the isolate reads the page as cheerio in Node does`, async () => {
    const html = readFileSync(join(DIR, name), 'utf8');
    // Test oracle only: our own constant source, evaluated in the test process.
    const extract = new Function(`return ${EXTRACT}`)() as (q: cheerio.CheerioAPI) => unknown;
    const expected = extract(cheerio.load(html));
    const r = await svc.post({
      url: fixtures.url(`/real/${name}`),
      // The raw HTML as served (not page.content(), which is Chromium's serialisation).
      script: `const res = await page.goto(targetUrl); const html = await res.text(); return (${EXTRACT})(cheerio.load(html))`,
    });
    assert.equal(r.status, 200, r.text.slice(0, 500));
    assert.deepEqual(r.body.data, expected);
  });
}

test('the page API works on a large real page: title, $$eval, evaluate', async () => {
  const r = await svc.post({
    url: fixtures.url('/real/guardian-1.html'),
    script: `return { title: await page.title(), links: await page.$$eval('a', (as) => as.length), text: await page.evaluate(() => document.body.innerText.length > 1000) }`,
  });
  assert.equal(r.status, 200, r.text.slice(0, 300));
  const d = r.body.data as { title: string; links: number; text: boolean };
  assert.ok(d.title.length > 0);
  assert.ok(d.links > 50);
  assert.equal(d.text, true);
});
