// The script's last calls to the host (page.click, elementHandle.type...), for
// the error body of a failed request: what it called, for how long, and how
// each call ended. Bounded by construction: a ring of the last MAX_RECENT_CALLS.
import { MAX_PAGE_CALLS, type PageCall } from '../../common/errors.js';

export const MAX_RECENT_CALLS = MAX_PAGE_CALLS;
/** A call's error is cut to this many characters in the log. */
const MAX_CALL_ERROR_CHARS = 300;

interface Entry {
  readonly method: string;
  readonly startedMs: number;
  endedMs?: number;
  outcome: PageCall['outcome'];
  error?: string;
}

/** "Page" → "page", "ElementHandle" → "elementHandle": the names the script uses. */
function receiverName(kind: string): string {
  return kind.charAt(0).toLowerCase() + kind.slice(1);
}

export class CallLog {
  readonly #entries: Entry[] = [];
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** Records a call starting; the returned function records how it ended (once). */
  start(kind: string, method: string): (error?: { name: string; message: string }) => void {
    const entry: Entry = {
      method: `${receiverName(kind)}.${method.slice(0, 64)}`,
      startedMs: this.#now(),
      outcome: 'pending',
    };
    this.#entries.push(entry);
    if (this.#entries.length > MAX_RECENT_CALLS) this.#entries.shift();
    return (error) => {
      if (entry.endedMs !== undefined) return;
      entry.endedMs = this.#now();
      entry.outcome = error === undefined ? 'ok' : 'error';
      if (error !== undefined) entry.error = `${error.name}: ${error.message}`.slice(0, MAX_CALL_ERROR_CHARS);
    };
  }

  /** The last calls, oldest first; a call still running reports its time so far. */
  recent(): PageCall[] {
    const now = this.#now();
    return this.#entries.map((e) => ({
      method: e.method,
      durationMs: Math.round((e.endedMs ?? now) - e.startedMs),
      outcome: e.outcome,
      ...(e.error === undefined ? {} : { error: e.error }),
    }));
  }
}
