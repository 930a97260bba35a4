// GET /docs as a person reads it: a table of contents, one row per error code
// (code, status, meaning, what to do), code spans rendered as code.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../../src/common/config.js';
import { ERRORS, type ErrorCode } from '../../../src/common/errors.js';
import { renderDocs } from '../../../src/front/info/docs-page.js';
import { openApiDocument } from '../../../src/front/info/openapi.js';
import { docSection } from '../../helpers/docs.js';

const KEYS = { API_KEYS: 'docs-test-key-0123456789' };
const html = renderDocs(openApiDocument(loadConfig(KEYS)));
const CODES = Object.keys(ERRORS) as ErrorCode[];

/** The HTML of one operation's section, from its heading to the next. */
function section(id: string): string {
  const start = html.indexOf(`<h3 id="${id}"`);
  assert.ok(start >= 0, `a section ${id}`);
  const next = html.indexOf('<h', start + 4);
  return html.slice(start, next < 0 ? undefined : next);
}

const rows = (part: string): string[] => [...part.matchAll(/<tr[^>]*>([\s\S]*?)<\/tr>/g)].map((m) => m[1] ?? '');
const cells = (row: string): string[] => [...row.matchAll(/<td>([\s\S]*?)<\/td>/g)].map((m) => m[1] ?? '');

test('each operation lists its error codes one per row: code, status, meaning, what to do', () => {
  const scrape = section('op-scrape');
  const errorRows = rows(scrape).filter((r) => r.includes('href="#err-'));
  const listed = errorRows.map((r) => /#err-([A-Z_]+)/.exec(r)?.[1]);
  // Every code POST /api/scrape can answer with except those of other paths.
  const elsewhere = new Set(['INVALID_METRICS_TOKEN', 'NOT_FOUND']);
  assert.deepEqual([...listed].sort(), CODES.filter((c) => !elsewhere.has(c)).sort());
  for (const r of errorRows) {
    const [code = '', status, meaning, action] = cells(r);
    const name = /([A-Z_]{4,})/.exec(code)?.[1] as ErrorCode;
    assert.equal(code.replace(/<[^>]+>/g, ''), name, `one code in the cell: ${code}`);
    assert.equal(status, String(ERRORS[name].status));
    assert.ok((meaning ?? '').length > 10, `${name}: a meaning`);
    assert.ok((action ?? '').length > 3, `${name}: what to do`);
  }
  // No cell runs codes together as text any more.
  for (const r of rows(html))
    for (const c of cells(r)) assert.ok((c.match(/[A-Z]+_[A-Z_]{3,}:/g) ?? []).length === 0, c);
});

test('the Errors section has one row per code, each with an anchor, meaning and what to do', () => {
  for (const code of CODES) {
    const row = new RegExp(`<tr id="err-${code}">([\\s\\S]*?)</tr>`).exec(html)?.[1];
    assert.ok(row, code);
    const [c, status, , action] = cells(row);
    assert.equal(c, `<code>${code}</code>`);
    assert.equal(status, String(ERRORS[code].status));
    assert.ok((action ?? '').length > 3);
  }
});

test('Markdown code spans are rendered as <code>, and no backtick is left showing', () => {
  const outsidePre = html.replace(/<pre>[\s\S]*?<\/pre>/g, '');
  assert.doesNotMatch(outsidePre, /`/);
  assert.match(html, /with <code>page<\/code> \(Puppeteer 24\)/);
  assert.match(html, /Wait <code>Retry-After<\/code> seconds\./);
  // Escaped first, so a code span cannot carry markup.
  assert.match(html, /Add <code>-H &#39;Content-Type: application\/json&#39;<\/code>/);
});

test('a table of contents links to every section and operation, and every link has its target', () => {
  const nav = /<nav[^>]*>([\s\S]*?)<\/nav>/.exec(html)?.[1] ?? '';
  const targets = [...nav.matchAll(/href="#([^"]+)"/g)].map((m) => m[1]);
  for (const id of ['example', 'operations', 'request', 'success', 'errors', 'limits', 'op-scrape', 'op-health'])
    assert.ok(targets.includes(id), id);
  const ids = new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]));
  for (const href of [...html.matchAll(/href="#([^"]+)"/g)].map((m) => m[1])) assert.ok(ids.has(href), href);
  assert.ok(
    [...html.matchAll(/<h2 id="([^"]+)"/g)].every((m) => m[1] === 'toc' || targets.includes(m[1])),
    'every section is in the contents',
  );
});

test('/docs links to the playground when it is on, and not when it is off', () => {
  assert.match(html, /<a href="playground">/);
  const off = renderDocs(openApiDocument(loadConfig({ ...KEYS, PLAYGROUND: 'off' })));
  assert.doesNotMatch(off, /playground/i);
});

test('the error table of docs/api.md says what to do in the same words as /docs', () => {
  const table = docSection('docs/api.md', '## Errors');
  for (const code of CODES) {
    const row = new RegExp(`^\\| \`${code}\` \\| \\d+ \\| .* \\| (.*) \\|$`, 'm').exec(table);
    assert.ok(row, code);
    assert.equal(row[1], ERRORS[code].action, code);
  }
});
