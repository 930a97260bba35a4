// The text Puppeteer sends for a script's page function, made on the host in linear
// time (src/slot/membrane/page-function.ts): the same text as Puppeteer's own
// stringifyFunction, on which that function takes one of its linear tests.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stringifyFunction } from '../../../node_modules/puppeteer-core/lib/esm/puppeteer/util/Function.js';
import { isIdentifierArrow, puppeteerFunctionText } from '../../../src/slot/membrane/page-function.js';

/** Puppeteer's own third arrow test, to compare with on short texts (where it is fast). */
const PUPPETEER_ARROW = /^(async)*\s*(?:[$_\p{ID_Start}])(?:[$\u200C\u200D\p{ID_Continue}])*\s*=>/u;

const asFunction = (text: string): (() => void) => {
  const f = (): void => undefined;
  Object.defineProperty(f, 'toString', { value: () => text });
  return f;
};

const TOKENS = [
  'async',
  ' ',
  'x',
  '1',
  '$',
  '_',
  '\u200C',
  '(',
  ')',
  '=>',
  '=',
  '>',
  'function',
  '*',
  '{}',
  '\n',
  '𝑥',
  'é',
  '\t',
  'a',
];

/** Texts of up to six tokens, drawn with a fixed seed (a small linear congruential generator). */
function* texts(count: number): Generator<string> {
  let seed = 12345;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let i = 0; i < count; i++) {
    const n = 1 + next(6);
    let t = '';
    for (let j = 0; j < n; j++) t += TOKENS[next(TOKENS.length)] as string;
    yield t;
  }
}

/** Every text of up to four tokens of a smaller set. */
function* allTexts(): Generator<string> {
  const small = ['async', ' ', 'x', '1', '(', '=>', '=', '\u200C', '𝑥', '$'];
  let level = [''];
  for (let n = 1; n <= 4; n++) {
    level = level.flatMap((t) => small.map((s) => t + s));
    yield* level;
  }
}

test("the arrow test decides as Puppeteer's regular expression on every short text of a few tokens and 50,000 drawn ones", () => {
  for (const t of [...allTexts(), ...texts(50_000)])
    assert.equal(isIdentifierArrow(t), PUPPETEER_ARROW.test(t), JSON.stringify(t));
});

test('the text made for Puppeteer is what its stringifyFunction makes, and stringifyFunction leaves it as it is', () => {
  const known = [
    'async x => x',
    'x=>1',
    '(a) => a',
    'async (a) => a',
    'function f() {}',
    'async function* g() {}',
    'test(){return 1}',
    'async test(){}',
    'async => 1',
    'asyncasync => 1',
    'async async x => 1',
    '$ => 1',
    'get x() {}',
  ];
  for (const t of [...known, ...texts(20_000)]) {
    const made = puppeteerFunctionText(t);
    assert.equal(made, stringifyFunction(asFunction(t)), JSON.stringify(t));
    assert.equal(stringifyFunction(asFunction(made)), made, JSON.stringify(t));
  }
});

test("a 200k-character async source is made into Puppeteer's text without its quadratic test, and Puppeteer keeps it", () => {
  for (const src of [
    'async'.repeat(40_000) + 'x(){return 7}',
    'async'.repeat(40_000) + ' x(){return 7}',
    'async '.repeat(40_000) + 'x(){return 7}',
    'async'.repeat(40_000) + 'x => 7',
    'async'.repeat(40_000) + ' => 7',
    'a'.repeat(200_000) + '(){}',
  ]) {
    const made = puppeteerFunctionText(src);
    // Puppeteer's own function on the text made here: one of its linear tests matches (a quadratic one would not end).
    assert.equal(stringifyFunction(asFunction(made)), made);
  }
  assert.equal(puppeteerFunctionText('async'.repeat(3) + 'x(){return 7}'), 'function asyncasyncasyncx(){return 7}');
});
