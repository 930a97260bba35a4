// Lines of a child process's stdout or stderr, each cut to a maximum length as
// it arrives. readline keeps a line until its end comes, however long it gets:
// a child that writes without a newline (a crash report, a flood) would grow the
// reader's memory without bound. This keeps at most `maxChars` of a line and
// counts the rest.
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';

/** A line as kept: its first characters, and how many more it had. */
export interface OutputLine {
  readonly text: string;
  readonly cutChars: number;
}

/** Splits text arriving in chunks into lines of at most `maxChars` characters (the rest counted). */
export class LineSplitter {
  readonly #maxChars: number;
  readonly #onLine: (line: OutputLine) => void;
  #current = '';
  #cut = 0;

  constructor(maxChars: number, onLine: (line: OutputLine) => void) {
    this.#maxChars = maxChars;
    this.#onLine = onLine;
  }

  /** The characters of the unfinished line held now (never more than maxChars). */
  get held(): number {
    return this.#current.length;
  }

  push(text: string): void {
    let from = 0;
    for (;;) {
      const end = text.indexOf('\n', from);
      this.#keep(text.slice(from, end === -1 ? text.length : end));
      if (end === -1) return;
      this.#emit();
      from = end + 1;
    }
  }

  /** The stream ended: an unfinished line is a line. */
  end(): void {
    if (this.#current !== '' || this.#cut > 0) this.#emit();
  }

  #keep(part: string): void {
    const room = this.#maxChars - this.#current.length;
    if (part.length <= room) this.#current += part;
    else {
      // SECURITY: what does not fit is counted, never kept.
      this.#current += part.slice(0, room);
      this.#cut += part.length - room;
    }
  }

  #emit(): void {
    const text = this.#current.endsWith('\r') ? this.#current.slice(0, -1) : this.#current;
    const line = { text, cutChars: this.#cut };
    this.#current = '';
    this.#cut = 0;
    this.#onLine(line);
  }
}

/** Reads `input` as UTF-8 lines of at most `maxChars` characters each. */
export function readBoundedLines(input: Readable, maxChars: number, onLine: (line: OutputLine) => void): void {
  const decoder = new StringDecoder('utf8');
  const lines = new LineSplitter(maxChars, onLine);
  input.on('data', (chunk: Buffer) => lines.push(decoder.write(chunk)));
  input.on('end', () => {
    lines.push(decoder.end());
    lines.end();
  });
  // A pipe error (the child gone) ends nothing of ours: its exit is handled elsewhere.
  input.on('error', () => lines.end());
}
