// What the caller hears when a script fails in its isolate: a syntax error with
// its position, an error the script threw with its line, column and stack, a
// result too large, the deadline, and the isolate's memory limit.
import { ApiError, scrapingFailed } from '../../common/errors.js';
import type { CheckedOutcome } from './outcome.js';

export function isMemoryError(e: unknown): boolean {
  return e instanceof Error && /memory limit|out of memory|heap/i.test(e.message);
}

/** "Unexpected identifier 'bar' [script.js:2:5]" → "SyntaxError: Unexpected identifier 'bar' (line 2, column 5)". */
function describeSyntaxError(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  const m = /^(.*?)\s*\[script\.js:(\d+):(\d+)\]$/.exec(msg);
  if (!m) return `SyntaxError: ${msg.replace(/\s*\[<isolated-vm>.*\]$/, '')}`;
  return `SyntaxError: ${m[1]} (line ${m[2]}, column ${m[3]})`;
}

/** Where a syntax error is, in the caller's coordinates (the compiler's [script.js:L:C]). */
function syntaxErrorPosition(e: unknown): { line: number; column: number } | undefined {
  const m = /\[script\.js:(\d+):(\d+)\]$/.exec(e instanceof Error ? e.message : String(e));
  return m ? { line: Number(m[1]), column: Number(m[2]) } : undefined;
}

/** The script did not compile: the isolate's memory ran out, or a syntax error with its position. */
export function compileFailure(e: unknown): ApiError {
  if (isMemoryError(e)) return new ApiError('MEMORY_LIMIT_EXCEEDED');
  const at = syntaxErrorPosition(e);
  return scrapingFailed(describeSyntaxError(e), undefined, at ? { failure: at } : {});
}

export function scriptTimedOut(timeoutMs: number): ApiError {
  return scrapingFailed(`the script timed out after ${timeoutMs} ms`, undefined, { timeout: 'script' });
}

/** A checked outcome that is a failure: its result too large, or what the script threw. */
export function outcomeFailure(outcome: Extract<CheckedOutcome, { ok: false }>): ApiError {
  if (outcome.code === 'RESULT_TOO_LARGE')
    return new ApiError('RESULT_TOO_LARGE', `Result too large: ${outcome.error.message}`);
  const { name, message, line, column, stack } = outcome.error;
  const where = line !== undefined ? ` (line ${line})` : '';
  // In the caller's coordinates: compiled with lineOffset -1 after a line of our own, so line 1 is theirs.
  return scrapingFailed(`${name}: ${message}${where}`, undefined, {
    failure: {
      ...(line === undefined ? {} : { line }),
      ...(column === undefined ? {} : { column }),
      ...(stack === undefined ? {} : { stack: `${name}: ${message}\n${stack}` }),
    },
  });
}
