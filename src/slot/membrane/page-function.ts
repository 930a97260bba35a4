// The text Puppeteer sends to the page for a script's page function, made here in
// linear time. SECURITY: Puppeteer's stringifyFunction (puppeteer-core
// util/Function.js) tests a function's text with
//   /^(async)*\s*(?:[$_\p{ID_Start}])(?:[$\u200C\u200D\p{ID_Continue}])*\s*=>/u
// which backtracks quadratically on a text it does not match ('async' many times,
// then 'x(){}'), on the slot process's one thread. So the host works out what
// stringifyFunction would return, and hands Puppeteer that text: on it, Puppeteer's
// first test (`function …`) or a cheap arrow test matches at once, and the text the
// page gets is exactly the one Puppeteer makes of the original function. A page
// function the isolate sends is checked and bounded here, and handed to Puppeteer
// as that text or in a carrier: a host function that only carries it.
import { isTagged } from '../../../sandbox/wire.js';
import { MAX_PAGE_FUNCTION_CHARS, budgetError } from './budgets.js';
import { MembraneError } from './options.js';

/** A run of identifier characters (ID_Continue, $, ZWNJ, ZWJ) at lastIndex; sticky, no backtracking. */
const ID_CONTINUE_RUN = /[$\u200C\u200D\p{ID_Continue}]*/uy;
const ID_START = /[$_\p{ID_Start}]/uy;
const WHITESPACE_RUN = /\s*/uy;
const ARROW = /\s*=>/uy;

function runEnd(re: RegExp, text: string, at: number): number {
  re.lastIndex = at;
  re.test(text);
  return re.lastIndex;
}

function matchesAt(re: RegExp, text: string, at: number): boolean {
  re.lastIndex = at;
  return re.test(text);
}

/**
 * Whether Puppeteer's third arrow test (above) matches the text, decided in one
 * pass: the text is `(async)^j \s* identifier \s* =>`. An identifier runs to the
 * end of the run of identifier characters it is in (what follows it must be
 * whitespace or "="), so either the identifier starts the text and is that whole
 * first run (any j: "async" is made of identifier characters), or the first run is
 * "async" exactly k times (k ≥ 0) and the identifier is the run after the
 * whitespace that follows it. test/unit/slot/page-function.test.ts compares this with
 * Puppeteer's own test on many texts.
 */
export function isIdentifierArrow(text: string): boolean {
  const firstEnd = runEnd(ID_CONTINUE_RUN, text, 0);
  if (firstEnd > 0 && matchesAt(ID_START, text, 0) && matchesAt(ARROW, text, firstEnd)) return true;
  let k = 0;
  while (text.startsWith('async', 5 * k)) k++;
  if (firstEnd !== 5 * k) return false;
  const start = runEnd(WHITESPACE_RUN, text, firstEnd);
  if (!matchesAt(ID_START, text, start)) return false;
  return matchesAt(ARROW, text, runEnd(ID_CONTINUE_RUN, text, start));
}

/**
 * What Puppeteer's stringifyFunction returns for a function whose text is `text`,
 * computed in linear time; Puppeteer's stringifyFunction of the result is the
 * result again, reached by one of its linear tests.
 */
export function puppeteerFunctionText(text: string): string {
  // Puppeteer's first two tests, as it writes them: anchored, and linear ("async " is a fixed token).
  if (/^(async )*function(\(|\s)/.test(text) || /^(async )*function\s*\*\s*/.test(text)) return text;
  if (text.startsWith('(') || /^async\s*\(/.test(text) || isIdentifierArrow(text)) return text;
  // A method shorthand (`test(){}`): Puppeteer prefixes it.
  if (text.startsWith('async ')) return `async function ${text.substring('async '.length)}`;
  return `function ${text}`;
}

/** A host function that carries a page function's text for Puppeteer to send to the page. */
export function pageFunctionCarrier(src: string): (...a: never[]) => unknown {
  // SECURITY: Puppeteer only calls toString() on this and sends the text to the
  // browser. Should anything ever call it on the host, it throws: the script's
  // source is never compiled or run here.
  const carrier = (): never => {
    throw new Error('pagescript: a page function was called on the host');
  };
  Object.defineProperty(carrier, 'toString', { value: () => src });
  return carrier;
}

/**
 * A page function as the isolate sent it: a string of JavaScript, or a function's
 * text. SECURITY: checked here whatever the runtime checked (the isolate can send
 * any tag), and at most maxChars (preload scripts have a budget of their own).
 */
export function pageFunctionSource(
  v: unknown,
  where: string,
  maxChars = MAX_PAGE_FUNCTION_CHARS,
): string | { src: string } {
  const source =
    typeof v === 'string' ? v : isTagged(v) && v.$ps === 'f' && typeof v.src === 'string' ? v.src : undefined;
  if (source === undefined) throw new MembraneError(`${where}: expected a function or a string of JavaScript`);
  if (source.length > maxChars)
    throw budgetError(`${where}: the page function is too long (${source.length} characters; at most ${maxChars})`);
  return typeof v === 'string' ? source : { src: source };
}

/** A function (as a carrier of its text) or a string expression, for the page. */
export function pageFunction(v: unknown, where: string): string | ((...a: never[]) => unknown) {
  const source = pageFunctionSource(v, where);
  // SECURITY: Puppeteer is given the text it would make of the function itself (above),
  // never the script's text for its quadratic test; any {"$ps":"f"} the isolate sends is treated so.
  return typeof source === 'string' ? source : pageFunctionCarrier(puppeteerFunctionText(source.src));
}
