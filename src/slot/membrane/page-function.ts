// The text Puppeteer sends to the page for a script's page function, made here in
// linear time. SECURITY: Puppeteer's stringifyFunction (puppeteer-core
// util/Function.js) tests a function's text with
//   /^(async)*\s*(?:[$_\p{ID_Start}])(?:[$\u200C\u200D\p{ID_Continue}])*\s*=>/u
// which backtracks quadratically on a text it does not match ('async'.repeat(40000)
// + 'x(){}' held the executor's one thread for ~20 s). So the host works out what
// stringifyFunction would return, and hands Puppeteer that text: on it, Puppeteer's
// first test (`function …`) or a cheap arrow test matches at once, and the text the
// page gets is exactly the one Puppeteer makes of the original function.

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
 * whitespace that follows it. test/unit/page-function.test.ts compares this with
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
