// The host's selector cost check (src/slot/membrane/budgets.ts) judges size
// only: every selector Puppeteer's own parser accepts passes it when it is
// within the bounds, whatever its syntax. Checked against Puppeteer's parser
// itself (puppeteer-core's PSelectorParser, parsel-js), on the selectors of
// Puppeteer's query tests and on many made from the characters selectors use.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePSelectors } from '../../../node_modules/puppeteer-core/lib/esm/puppeteer/common/PSelectorParser.js';
import { checkSelectorCost } from '../../../src/slot/membrane/budgets.js';

const accepts = (s: string): boolean => {
  try {
    parsePSelectors(s);
    return true;
  } catch {
    return false;
  }
};

const refusal = (s: string): string | undefined => {
  try {
    checkSelectorCost(s, 'page.$');
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
};

test("selectors of Puppeteer's query tests pass the cost check (escapes, quotes, P-selectors)", () => {
  const selectors = [
    ':scope >>> ::-p-text(My name is Jun \\(pronounced like "June"\\))',
    "::-p-text(it's)",
    '::-p-text("a(b")',
    "div ::-p-text('a\"b')",
    "div[title='a\\'b']",
    '::-p-aria([name="Submit"][role="button"])',
    '::-p-aria(foo\\)bar)',
    'div >>>> ::-p-xpath(//div[@id="a"])',
    '.a\\:b',
    '[data-x="a,b]"] > p:nth-child(2n+1) ~ span',
    ':is(.a, .b):not(:has(> p))',
    'a >>> ::-p-text(Hello, world) >>>> ::-p-aria([name="x"][role="button"])',
  ];
  for (const s of selectors) {
    assert.ok(accepts(s), `Puppeteer's parser accepts ${s}`);
    assert.equal(refusal(s), undefined, s);
  }
});

test("selectors Puppeteer's parser refuses pass the cost check too: the parser (or the page) answers, not the host", () => {
  for (const s of ['a:not(', '"', '[a="b]', '[a=', 'div)', '::-p-text(a']) assert.equal(refusal(s), undefined, s);
});

test("every selector Puppeteer's parser accepts within the bounds passes (12,000 made from selector characters)", () => {
  // A fixed pseudo-random sequence (a linear congruential generator): the same selectors each run.
  let seed = 37;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const alphabet = ['a', 'b', 'div', ' ', '.', '#', ':', '::-p-text', '::-p-aria', '(', ')', '[', ']', '=', '"', "'"];
  const more = ['\\', ',', '>', '>>>', '>>>>', '+', '~', '*', '|', '&', 'é', '\n'];
  let accepted = 0;
  for (let i = 0; i < 12_000; i++) {
    let s = '';
    const length = 1 + next(24);
    for (let j = 0; j < length; j++) s += next(4) === 0 ? more[next(more.length)] : alphabet[next(alphabet.length)];
    if (!accepts(s)) continue;
    accepted++;
    assert.equal(refusal(s), undefined, JSON.stringify(s));
  }
  // The sequence must reach many accepted selectors, or the test proves little.
  assert.ok(accepted > 1_000, `${accepted} accepted`);
});
