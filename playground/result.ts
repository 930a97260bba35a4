// Reading the service's answer for the playground: the Server-Timing split and
// where in the script an error happened. No DOM here, so the tests import it.

export interface TimingPart {
  readonly name: string;
  readonly ms: number;
}

/** "queue;dur=0.1, navigation;dur=120.5" → [{name: 'queue', ms: 0.1}, …]; entries without dur are skipped. */
export function parseServerTiming(header: string | null): TimingPart[] {
  if (header === null) return [];
  const out: TimingPart[] = [];
  for (const entry of header.split(',')) {
    const [name, ...params] = entry.split(';').map((s) => s.trim());
    if (name === undefined || !/^[\w.-]+$/.test(name)) continue;
    const dur = params.map((p) => /^dur=([0-9.]+)$/.exec(p)).find((m) => m !== null);
    const ms = dur ? Number(dur[1]) : NaN;
    if (Number.isFinite(ms)) out.push({ name, ms });
  }
  return out;
}

export interface UsageFigure {
  /** The header it was read from (X-Usage-Cpu-Ms…). */
  readonly header: string;
  readonly label: string;
  /** The header's value as sent, with its unit. */
  readonly text: string;
}

/** The X-Usage-* headers the playground shows, in this order (docs/keys-and-limits.md "What a request cost"). */
const USAGE_FIGURES: readonly [header: string, label: string, unit: string][] = [
  ['X-Usage-Cpu-Ms', 'CPU', 'ms'],
  ['X-Usage-Page-Memory-Peak-MiB', 'page memory, peak', 'MiB'],
  ['X-Usage-Isolate-Heap-Peak-MiB', 'isolate heap, peak', 'MiB'],
  ['X-Usage-Bytes-Received', 'received', 'bytes'],
  ['X-Usage-Bytes-Sent', 'sent', 'bytes'],
  ['X-Usage-Connections', 'connections', ''],
  ['X-Usage-Wall-Ms', 'wall', 'ms'],
];

/** What the request cost, from its X-Usage-* headers; a header absent or not a number is left out. */
export function parseUsage(get: (header: string) => string | null): UsageFigure[] {
  const out: UsageFigure[] = [];
  for (const [header, label, unit] of USAGE_FIGURES) {
    const v = get(header);
    if (v === null || !/^\d+(\.\d+)?$/.test(v)) continue;
    out.push({ header, label, text: unit === '' ? v : `${v} ${unit}` });
  }
  return out;
}

export interface ErrorLocation {
  /** 1-based, in the caller's script: line 1 is the script's first line. */
  readonly line: number;
  readonly column?: number;
}

/**
 * Where a failed script's error happened, in the script's own lines.
 *
 * Hook for the failure details of issue 18: when the error body carries a
 * numeric `line` (and `column`), that is used. Until then, the line is read
 * from the message, which ends in "(line N)" for a thrown error or
 * "(line N, column M)" for a syntax error (src/slot/membrane/script-sandbox.ts). Only the
 * end of the message is read, so a "(line 9)" in the script's own error text
 * is not taken for the location.
 */
export function errorLocation(body: unknown, scriptLines: number): ErrorLocation | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const b = body as Record<string, unknown>;
  let line: number | undefined;
  let column: number | undefined;
  if (typeof b.line === 'number') {
    line = b.line;
    if (typeof b.column === 'number') column = b.column;
  } else if (b.code === 'SCRAPING_FAILED' && typeof b.error === 'string') {
    const m = /\(line (\d+)(?:, column (\d+))?\)$/.exec(b.error);
    if (m) {
      line = Number(m[1]);
      if (m[2] !== undefined) column = Number(m[2]);
    }
  }
  if (line === undefined || !Number.isInteger(line) || line < 1 || line > scriptLines) return undefined;
  return column === undefined ? { line } : { line, column };
}
