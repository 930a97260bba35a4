// The table of docs/puppeteer-differences.md ("Where pagescript differs from
// Puppeteer") and the conformance suite's ledger (test/conformance/differences.ts)
// say the same, both ways.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KNOWN_DIFFERENCES } from '../../conformance/differences.js';
import { docSection } from '../../helpers/docs.js';

function documentedRows(): Map<string, string> {
  const section = docSection('docs/puppeteer-differences.md', '# Where pagescript differs from Puppeteer');
  const rows = new Map<string, string>();
  for (const line of section.split('\n')) {
    const [, name, reason] = /^\| (.+?) \| (.+) \|$/.exec(line) ?? [];
    if (name === undefined || reason === undefined || name === 'Case') continue;
    rows.set(name, reason);
  }
  return rows;
}

test('every case that differs on purpose is in the docs table with its reason, and nothing else is', () => {
  const onPurpose = new Map(
    Object.entries(KNOWN_DIFFERENCES)
      .filter(([, d]) => d.onPurpose)
      .map(([name, d]) => [name, d.reason]),
  );
  assert.ok(onPurpose.size > 0);
  assert.deepEqual(documentedRows(), onPurpose);
});
