// The isolate's own console formatting (sandbox/inspect.ts) and UTF-8 codec
// (sandbox/textcodec.ts), run here in Node and compared with Node's own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { format as nodeFormat } from 'node:util';
import { format, inspect } from '../../../sandbox/inspect.js';
import { TextDecoder, TextEncoder } from '../../../sandbox/textcodec.js';

test('console formatting matches Node for the values scripts log', () => {
  const cases: unknown[][] = [
    ['title is', 'Example Domain'],
    [{ length: 14 }],
    [[1, 'two', null, undefined, true]],
    ['%s has %d items costing %i', 'cart', 3, 42.9],
    ['%j', { a: [1, 2] }],
    ['100%% sure', 1],
    [new Map([['k', 1]]), new Set([1, 2])],
    [{ nested: { deeper: { deepest: { gone: 1 } } } }],
    [-0, 10n, Symbol('s')],
    [new Uint8Array([1, 2, 3])],
    [{ 'not-an-identifier': 1, ok: "it's" }],
    [['it\'s "quoted"', 'back\\slash\nnewline']],
  ];
  for (const [i, args] of cases.entries()) assert.equal(format(args), nodeFormat(...args), `case ${i}`);
});

test('console formatting is bounded: cycles, long arrays and long strings', () => {
  const cyclic: Record<string, unknown> = { name: 'loop' };
  cyclic.self = cyclic;
  assert.equal(inspect(cyclic), "{ name: 'loop', self: [Circular *1] }");
  assert.match(inspect(Array.from({ length: 150 }, (_, i) => i)), /\.\.\. 50 more items\n\]$/);
  const long = ['x'.repeat(20_000)];
  const oneLine = (t: string): string => t.replace(/\[\n\s*/, '[ ').replace(/\n\]$/, ' ]');
  assert.equal(oneLine(inspect(long)), oneLine(nodeFormat(long)));
});

test('TextEncoder and TextDecoder agree with Node on text, astral characters and lone surrogates', () => {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  for (const s of [
    '',
    'plain',
    'héllo wörld',
    '日本語',
    '😀 emoji',
    'lone \ud800 high',
    'lone \udc00 low',
    'end \ud83d',
  ]) {
    const bytes = encoder.encode(s);
    assert.deepEqual([...bytes], [...new globalThis.TextEncoder().encode(s)], JSON.stringify(s));
    assert.equal(decoder.decode(bytes), new globalThis.TextDecoder().decode(bytes), JSON.stringify(s));
  }
});

test('invalid UTF-8 becomes U+FFFD, or a TypeError with fatal: true', () => {
  for (const bytes of [
    [0xff],
    [0xc0, 0x80],
    [0xe0, 0x80, 0x80],
    [0xed, 0xa0, 0x80],
    [0xf4, 0x90, 0x80, 0x80],
    [0x61, 0xe2],
  ]) {
    const input = new Uint8Array(bytes);
    assert.ok(new TextDecoder().decode(input).includes('\ufffd'), bytes.join(','));
    assert.throws(() => new TextDecoder('utf-8', { fatal: true }).decode(input), TypeError, bytes.join(','));
  }
  assert.throws(() => new TextDecoder('latin1'), RangeError);
});
