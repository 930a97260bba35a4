// What a line costs to parse, read before it is parsed. SECURITY: JSON.parse
// makes a value of every token, and V8 holds an empty array or object in tens
// of bytes: a line of `[[],[],…]` grows the reader's heap by many times its
// bytes. What an honest peer sends puts its bulk in strings (a script's result
// is JSON text in a string); its structure is small. So the reader counts the
// structure first, jumping through strings with indexOf, and refuses a line
// with more of it than any honest message has.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** The longest number or literal JSON.stringify writes (-1.7976931348623157e+308 is 24 bytes). */
export const MAX_LITERAL_BYTES = 32;

/** 1 for a token (`{ [ , :`: each value and key follows one), 2 for a closing bracket, 3 for a literal's byte. */
const KIND = new Uint8Array(256);
for (const c of '{[,:') KIND[c.charCodeAt(0)] = 1;
for (const c of ']}') KIND[c.charCodeAt(0)] = 2;
for (const c of '0123456789-+.eEtrufalsn') KIND[c.charCodeAt(0)] = 3;

/**
 * The structural tokens (`{ [ , :` outside strings) of the JSON line `buf[start, end)`, whose bytes are
 * those JSON.stringify writes. Throws past `maxTokens`, for a string without end, and for what compact
 * JSON never has outside a string (whitespace, any other byte, a literal over MAX_LITERAL_BYTES): none
 * of it makes a value, but each would be parsed.
 */
export function countTokens(buf: Buffer, start: number, end: number, maxTokens: number): number {
  let tokens = 0;
  let literal = 0;
  let i = start;
  while (i < end) {
    const b = buf[i] as number;
    if (b === QUOTE) {
      i = stringEnd(buf, i, end);
      literal = 0;
      continue;
    }
    const kind = KIND[b];
    if (kind === 3) {
      if (++literal > MAX_LITERAL_BYTES)
        throw new Error(`it sent a number or literal longer than ${MAX_LITERAL_BYTES} bytes`);
    } else if (kind === 1 || kind === 2) {
      literal = 0;
      if (kind === 1 && ++tokens > maxTokens)
        throw new Error(`it sent a message of more than ${maxTokens} JSON values`);
    } else {
      throw new Error(`it sent a line that is not compact JSON (byte 0x${b.toString(16)} outside a string)`);
    }
    i++;
  }
  return tokens;
}

/** How far a string is read byte by byte before indexOf jumps: JSON text in a string escapes a quote every few bytes. */
const BY_HAND_BYTES = 64;

/** Just past the quote that closes the string opened at `open`: the first quote after it not escaped. */
function stringEnd(buf: Buffer, open: number, end: number): number {
  let i = open + 1;
  for (;;) {
    for (const stop = Math.min(i + BY_HAND_BYTES, end); i < stop; i++) {
      const b = buf[i];
      if (b === QUOTE) return i + 1;
      if (b === BACKSLASH) i++;
    }
    if (i >= end) break;
    const quote = buf.indexOf(QUOTE, i);
    if (quote < 0 || quote >= end) break;
    // Escaped when an odd run of backslashes comes before it (from `i` on: nothing before is in an escape).
    let k = quote - 1;
    while (k >= i && buf[k] === BACKSLASH) k--;
    if ((quote - 1 - k) % 2 === 0) return quote + 1;
    i = quote + 1;
  }
  throw new Error('it sent a JSON line with a string that does not end');
}
