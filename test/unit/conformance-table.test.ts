// The README's table "Where pagescript differs from Puppeteer" and the conformance
// suite's ledger (test/conformance/differences.ts) say the same, both ways.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { KNOWN_DIFFERENCES } from '../conformance/differences.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

function readmeRows(): Map<string, string> {
  const start = README.indexOf('### Where pagescript differs from Puppeteer');
  assert.ok(start >= 0, 'the README has no section "Where pagescript differs from Puppeteer"');
  const end = README.indexOf('\n## ', start);
  const rows = new Map<string, string>();
  for (const line of README.slice(start, end).split('\n')) {
    const [, name, reason] = /^\| (.+?) \| (.+) \|$/.exec(line) ?? [];
    if (name === undefined || reason === undefined || name === 'Case') continue;
    rows.set(name, reason);
  }
  return rows;
}

test('every case that differs on purpose is in the README table with its reason, and nothing else is', () => {
  const onPurpose = new Map(
    Object.entries(KNOWN_DIFFERENCES)
      .filter(([, d]) => d.onPurpose)
      .map(([name, d]) => [name, d.reason]),
  );
  assert.ok(onPurpose.size > 0);
  assert.deepEqual(readmeRows(), onPurpose);
});
