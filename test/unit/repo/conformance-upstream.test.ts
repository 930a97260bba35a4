// The conformance suite against Puppeteer's own tests: every `it` of the spec
// files it draws from (pinned in test/conformance/upstream/, with the commit they
// were read at) is translated by a case, or listed in test/conformance/untranslated.ts
// with its reason. No Chromium: this reads the lists only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ALL_CASES } from '../../conformance/cases/index.js';
import { caseId } from '../../conformance/harness.js';
import { UNTRANSLATED } from '../../conformance/untranslated.js';
import { coverage, coverageLines, translates, upstreamFiles, upstreamIds } from '../../conformance/upstream.js';

const files = upstreamFiles();
const ids = upstreamIds(files);
const everyId = new Set([...ids.values()].flat());

test('each pinned spec file names its repository, path and commit, and has tests', () => {
  assert.ok(files.length > 0);
  for (const f of files) {
    assert.equal(f.repository, 'puppeteer/puppeteer', f.area);
    assert.equal(f.path, `test/src/${f.area}.spec.ts`, f.area);
    assert.match(f.commit, /^[0-9a-f]{40}$/, f.area);
    assert.ok(f.tests.length > 0, f.area);
  }
});

test('every area of the suite has its spec file pinned', () => {
  const pinned = new Set(files.map((f) => f.area));
  const used = [...new Set(ALL_CASES.map((c) => c.area))].filter((a) => !pinned.has(a));
  assert.deepEqual(used, []);
});

test('every upstream test is translated by a case or listed with its reason', (t) => {
  const areas = coverage(ALL_CASES, files);
  for (const line of coverageLines(areas)) t.diagnostic(line);
  assert.deepEqual(
    areas.flatMap((a) => a.missing),
    [],
    'upstream tests neither translated (a case named so, or naming it in `upstream`) nor in test/conformance/untranslated.ts',
  );
});

test('untranslated.ts lists upstream tests only, and none that a case translates', () => {
  const translated = new Set(ALL_CASES.flatMap(translates));
  assert.deepEqual(
    Object.keys(UNTRANSLATED).filter((id) => !everyId.has(id)),
    [],
    'listed but not upstream',
  );
  assert.deepEqual(
    Object.keys(UNTRANSLATED).filter((id) => translated.has(id)),
    [],
    'listed but translated: remove them from the list',
  );
  for (const [id, u] of Object.entries(UNTRANSLATED)) assert.ok(u.text.length > 0, id);
});

test("a case's upstream field names upstream tests", () => {
  const wrong = ALL_CASES.filter((c) => c.upstream !== undefined && translates(c).some((id) => !everyId.has(id)));
  assert.deepEqual(wrong.map(caseId), []);
});
