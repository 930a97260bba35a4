// Each error code is written once, in src/common/errors.ts; the error table of
// docs/api.md and the OpenAPI document say the same, in both directions.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { loadConfig } from '../../../src/common/config.js';
import { ERRORS, type ErrorCode } from '../../../src/common/errors.js';
import { openApiDocument } from '../../../src/front/info/openapi.js';
import { docSection } from '../../helpers/docs.js';

/** The rows of docs/api.md's "## Errors" table: code → [status, meaning, what to do]. */
function documentedErrorRows(): Map<string, [number, string, string]> {
  const section = docSection('docs/api.md', '## Errors');
  const rows = new Map<string, [number, string, string]>();
  for (const line of section.split('\n')) {
    const m = /^\| `([A-Z_]+)` \| (\d{3}) \| (.+) \| (.+) \|$/.exec(line);
    if (m) {
      assert.ok(!rows.has(m[1] as string), `${m[1]} is in the table twice`);
      rows.set(m[1] as string, [Number(m[2]), m[3] as string, m[4] as string]);
    }
  }
  return rows;
}

test('every code in src/common/errors.ts has a row in docs/api.md with the same status, meaning and advice', () => {
  const rows = documentedErrorRows();
  for (const [code, e] of Object.entries(ERRORS)) {
    assert.deepEqual(rows.get(code), [e.status, e.meaning, e.action], code);
  }
});

test('every code in the error table of docs/api.md exists in src/common/errors.ts', () => {
  const rows = documentedErrorRows();
  assert.ok(rows.size > 0, 'no error table found under "## Errors"');
  for (const code of rows.keys()) assert.ok(Object.hasOwn(ERRORS, code), `${code} is documented but not declared`);
});

test('the OpenAPI document lists every code with the meaning from src/common/errors.ts, and no other', () => {
  const doc = openApiDocument(loadConfig({ LOG_LEVEL: 'silent' })) as {
    components: { schemas: { ErrorCode: { enum: string[]; 'x-codes': Record<string, { meaning: string }> } } };
  };
  const { enum: codes, 'x-codes': described } = doc.components.schemas.ErrorCode;
  assert.deepEqual([...codes].sort(), Object.keys(ERRORS).sort());
  for (const code of codes) assert.equal(described[code]?.meaning, ERRORS[code as ErrorCode].meaning, code);
});

test("the OpenAPI version is package.json's", () => {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  const doc = openApiDocument(loadConfig({ LOG_LEVEL: 'silent' })) as { info: { version: string } };
  assert.equal(doc.info.version, pkg.version);
});
