// What the host spends on one request's behalf, bounded: membrane calls in
// flight, bytes crossing the membrane and waiting to cross it, host CPU, and
// the shapes of selector that Puppeteer parses slowly on the host's main thread.
// Every limit has a message naming it (see docs/budgets.md).
import { MembraneError } from './options.js';

/** Membrane calls a script may have in flight; the next one fails at once. */
export const MAX_CALLS_IN_FLIGHT = 100;
/**
 * Calls the script aborted that still run on the host (Puppeteer's non-wait methods run
 * to their end); each keeps its arguments' characters in flight until it settles.
 */
export const MAX_ABANDONED_CALLS = 1_000;
/** One message from the isolate (a call and its arguments), in characters. */
export const MAX_MESSAGE_CHARS = 16 * 1024 * 1024;
/** Arguments of all the calls in flight together, in characters. */
export const MAX_IN_FLIGHT_CHARS = 32 * 1024 * 1024;
/** One result, event or page-function call going into the isolate, in characters. */
export const MAX_TRANSFER_CHARS = 16 * 1024 * 1024;
/** Everything on its way into the isolate and not yet taken, in characters. */
export const MAX_QUEUED_CHARS = 32 * 1024 * 1024;
/**
 * Page events waiting for a busy isolate to take them, and exposed-function calls from the page
 * waiting for its answer; past either, the next one is dropped (an exposed function's call fails
 * in the page) before anything of it is encoded, and counted.
 */
export const MAX_WAITING_EVENTS = 1_000;
/** The characters of the page events waiting for the isolate (within MAX_QUEUED_CHARS, which results share). */
export const MAX_WAITING_EVENT_CHARS = 8 * 1024 * 1024;
export const MAX_WAITING_EXPOSED_CALLS = 1_000;
/**
 * The handle table's data, in characters: each handle counts HANDLE_CHARS and the strings
 * the host copied of it for the isolate (a console message's text, a request's URL and
 * headers), which its Puppeteer object holds as long as the table does.
 */
export const MAX_HANDLE_CHARS = 32 * 1024 * 1024;
export const HANDLE_CHARS = 256;
/** One console line, in characters; the rest is cut (the total is MAX_LOG_BYTES). */
export const MAX_LOG_LINE_CHARS = 16 * 1024;
/** Functions a script may have exposed to its page at once (page.exposeFunction). */
export const MAX_EXPOSED_FUNCTIONS = 64;
/** The name of one (Puppeteer keeps it, in the text of a preload script, and Chromium as a binding). */
export const MAX_EXPOSED_NAME_CHARS = 1_024;
/**
 * Scripts a script may have set to run in every new document at once
 * (page.evaluateOnNewDocument, until removeScriptToEvaluateOnNewDocument), and
 * their characters together: Puppeteer keeps each one's source on the host
 * until the page closes, and sends them all to every frame of another site.
 */
export const MAX_PRELOAD_SCRIPTS = 64;
export const MAX_PRELOAD_CHARS = 16 * 1024 * 1024;
/**
 * A page function's source (a function's text or a string of JavaScript), in characters: Puppeteer
 * keeps it, tests it and sends it in one DevTools message per call (and per poll of a wait).
 */
export const MAX_PAGE_FUNCTION_CHARS = 1024 * 1024;
/** Host CPU spent in membrane calls of one request (their synchronous part), in milliseconds. */
export const MAX_HOST_CPU_MS = 5_000;

/** A selector's length. CSS selectors in the wild are well under 500 characters. */
export const MAX_SELECTOR_CHARS = 2_048;
/** Simple selectors, combinators and commas in one selector. */
export const MAX_SELECTOR_PARTS = 256;
/** Nesting of () in a selector, as Puppeteer's parser reads them. */
export const MAX_SELECTOR_DEPTH = 16;

export function budgetError(message: string): MembraneError {
  const e = new MembraneError(message);
  e.name = 'RangeError';
  return e;
}

/** Escapes and quoted strings, as Puppeteer's parser (parsel-js's tokenize) takes them out before it reads the rest. */
const SELECTOR_ESCAPE = /\\./g;
const SELECTOR_STRING = /(['"])([^\\\n]*?)\1/g;

/**
 * Refuses, before Puppeteer parses it, a selector whose size its parser
 * (parsel-js, on the host's main thread) handles in quadratic time (figures in
 * docs/performance.md). Within these bounds every shape tried parses in a few
 * milliseconds (test/unit/slot/budgets.test.ts). Only size is judged, read as the
 * parser reads it (escapes and strings first, then parentheses): syntax is
 * the parser's to refuse, so every selector it accepts within the bounds
 * passes (checked against it in test/unit/slot/selector-cost.test.ts).
 */
export function checkSelectorCost(s: string, where: string): void {
  if (s.length > MAX_SELECTOR_CHARS)
    throw budgetError(`${where}: selector is too long (${s.length} characters; at most ${MAX_SELECTOR_CHARS})`);
  // Each escape and string is a part too: the parser puts every one back into every token it falls in.
  let parts = 0;
  const mask = (m: string): string => {
    parts++;
    return '_'.repeat(m.length);
  };
  const text = s.replace(SELECTOR_ESCAPE, mask).replace(SELECTOR_STRING, mask);
  let depth = 0;
  for (const c of text) {
    switch (c) {
      case '(':
        depth++;
        if (depth > MAX_SELECTOR_DEPTH)
          throw budgetError(`${where}: selector is nested too deeply (at most ${MAX_SELECTOR_DEPTH} levels)`);
        parts++;
        break;
      case ')':
        if (depth > 0) depth--;
        else parts++; // one the parser finds no "(" for: a token of its own
        break;
      case '[':
      case '.':
      case '#':
      case ':':
      case ',':
      case '>':
      case '+':
      case '~':
      case ' ':
      case '=':
        parts++;
        break;
    }
  }
  if (parts > MAX_SELECTOR_PARTS)
    throw budgetError(`${where}: selector has too many parts (${parts}; at most ${MAX_SELECTOR_PARTS})`);
}
