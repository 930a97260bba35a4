// The count of a line's JSON values before it is parsed (src/protocol/compact-json.ts): what
// JSON.stringify writes is counted as JSON.parse would read it, strings and their escapes included.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_LITERAL_BYTES, countTokens } from '../../../src/protocol/compact-json.js';

const count = (text: string, max = 1e9): number => countTokens(Buffer.from(text), 0, Buffer.byteLength(text), max);

test('what JSON.stringify writes is counted, a token for each value and key after the first, whatever its strings hold', () => {
  for (const v of [
    { type: 'done', id: 1, outcome: { json: '{"a":[1,2,{"b":"c"}]}', logs: ['x', 'y'] } },
    ['a"b', 'c\\', '\\"', '\\\\"', '"'.repeat(200), `${'x'.repeat(63)}"`, `${'\\'.repeat(65)}"`],
    { s: `${'é€😀'.repeat(1000)}\u0000\n\u2028` },
    [true, false, null, -1.7976931348623157e308, 5e-324, 0],
    [],
    {},
  ]) {
    const text = JSON.stringify(v);
    // Counted as a parser would: each `{ [ , :` outside strings.
    const structure = JSON.stringify(v, (_k, x: unknown) => (typeof x === 'string' ? '' : x)).replace(/"[^"]*"/g, '');
    assert.equal(count(text), (structure.match(/[{[,:]/g) ?? []).length, text.slice(0, 80));
  }
});

test('a line past its bound of values is refused', () => {
  assert.equal(count('[[],[]]', 4), 4);
  assert.throws(() => count('[[],[],[]]', 4), /more than 4 JSON values/);
});

test("a string that does not end, or whose last quote is escaped, is refused; bytes past the line's end are not its own", () => {
  assert.throws(() => count('{"a":"b}'), /does not end/);
  assert.throws(() => count('["a\\"]'), /does not end/);
  assert.throws(() => count(`["${'x'.repeat(100)}\\"]`), /does not end/);
  // The line ends before the quote that follows it in the buffer (the next line's).
  const buf = Buffer.from('["abc\n"]');
  assert.throws(() => countTokens(buf, 0, 5, 100), /does not end/);
});

test('what compact JSON never has outside a string is refused: whitespace, other bytes, a long literal', () => {
  for (const text of [
    '{"a": 1}',
    ' []',
    '[1]\r',
    '[\u00a0]',
    '[1,\t2]',
    '[x]',
    `[${'1'.repeat(MAX_LITERAL_BYTES + 1)}]`,
  ])
    assert.throws(() => count(text), /compact JSON|longer than/, JSON.stringify(text));
  assert.equal(count(`[${'1'.repeat(MAX_LITERAL_BYTES)}]`), 1);
});
