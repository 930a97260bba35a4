// What a request cost (docs/keys-and-limits.md "What a request cost"): the
// figures on every reply after authentication, one usage record per request
// for the operator (USAGE_LOG), and per-key counters in /metrics. Records hold
// the key's name and figures only: never the script, the URL or any key.
import { appendFile } from 'node:fs/promises';
import type { Config } from '../common/config.js';
import type { Logger } from '../common/log.js';
import type { JobUsage } from '../protocol/jobs.js';

/** One request's figures: the job's own (JobUsage) with the front's timings. */
export interface RequestUsage extends JobUsage {
  readonly wallMs: number;
  readonly queueMs?: number;
}

/** The reply headers, in the order they are documented; a figure not known is left out. */
const HEADERS: readonly [keyof RequestUsage, string][] = [
  ['wallMs', 'X-Usage-Wall-Ms'],
  ['queueMs', 'X-Usage-Queue-Ms'],
  ['cpuMs', 'X-Usage-Cpu-Ms'],
  ['pageMemoryPeakMb', 'X-Usage-Page-Memory-Peak-MiB'],
  ['isolateHeapPeakMb', 'X-Usage-Isolate-Heap-Peak-MiB'],
  ['bytesReceived', 'X-Usage-Bytes-Received'],
  ['bytesSent', 'X-Usage-Bytes-Sent'],
  ['connections', 'X-Usage-Connections'],
];

export const USAGE_HEADER_NAMES: readonly string[] = HEADERS.map(([, h]) => h);

/** MiB figures keep one decimal; the others are whole numbers. */
function figure(name: keyof RequestUsage, v: number): string {
  return name.endsWith('Mb') ? v.toFixed(1) : String(Math.round(v));
}

export function usageHeaders(u: RequestUsage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, header] of HEADERS) {
    const v = u[name];
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) out[header] = figure(name, v);
  }
  return out;
}

/** The job's figures with the guard's counts, as far as the slot reported them. */
export function jobUsage(usage: JobUsage | undefined, egress: Readonly<Record<string, number>> | undefined): JobUsage {
  return {
    ...usage,
    ...(egress?.bytesReceived !== undefined ? { bytesReceived: egress.bytesReceived } : {}),
    ...(egress?.bytesSent !== undefined ? { bytesSent: egress.bytesSent } : {}),
    ...(egress?.connections !== undefined ? { connections: egress.connections } : {}),
  };
}

export interface UsageRecord extends RequestUsage {
  readonly time: string;
  readonly key: string;
  readonly requestId: string;
  /** OK or the error code. */
  readonly code: string;
  readonly status: number;
}

/**
 * SECURITY: the most usage-record text waiting for the disk, in bytes (a record
 * is ~300): a slow or stuck disk holds this much of the front's memory at most.
 * Records past it are dropped, counted and logged, never the reply.
 */
export const USAGE_QUEUE_BYTES = 4 * 2 ** 20;

/** How the records reach the file; injected so tests can stand in a slow or stuck disk. */
export type AppendFile = (path: string, text: string) => Promise<void>;

const appendRecords: AppendFile = (path, text) => appendFile(path, text, { mode: 0o600 });

/**
 * Writes usage records where USAGE_LOG says: one JSON line each. A file is
 * appended to in order, one write at a time, with what queued meanwhile in one
 * write; past USAGE_QUEUE_BYTES waiting, records are dropped (onDropped counts
 * them; a line is logged when dropping starts and when it ends). A write that
 * fails is logged and its records are lost, never the reply.
 */
export class UsageLog {
  readonly #to: Config['usageLog'];
  readonly #logger: Logger;
  readonly #append: AppendFile;
  readonly #onDropped: () => void;
  readonly #maxQueuedBytes: number;
  #queue: string[] = [];
  #queuedBytes = 0;
  #writing: Promise<void> | undefined;
  /** Records dropped since dropping last started (0: not dropping). */
  #droppedInSpell = 0;
  #dropped = 0;

  constructor(
    config: Pick<Config, 'usageLog'>,
    logger: Logger,
    opts: { append?: AppendFile; onDropped?: () => void; maxQueuedBytes?: number } = {},
  ) {
    this.#to = config.usageLog;
    this.#logger = logger;
    this.#append = opts.append ?? appendRecords;
    this.#onDropped = opts.onDropped ?? (() => undefined);
    this.#maxQueuedBytes = opts.maxQueuedBytes ?? USAGE_QUEUE_BYTES;
  }

  /** Records dropped for a full queue since the start. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Bytes of records waiting for the disk now. */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  record(r: UsageRecord): void {
    const to = this.#to;
    if (to.to === 'off') return;
    if (to.to === 'stdout') {
      this.#logger.info({ usage: r }, 'usage');
      return;
    }
    const line = `${JSON.stringify(r)}\n`;
    if (this.#queuedBytes + line.length > this.#maxQueuedBytes) {
      this.#dropped++;
      this.#onDropped();
      if (this.#droppedInSpell++ === 0)
        this.#logger.error(
          { file: to.path, queuedBytes: this.#queuedBytes },
          'usage records are being dropped: the usage file is not written fast enough',
        );
      return;
    }
    this.#queue.push(line);
    this.#queuedBytes += line.length;
    this.#writing ??= this.#drain(to.path);
  }

  async #drain(path: string): Promise<void> {
    while (this.#queue.length > 0) {
      const text = this.#queue.join('');
      const records = this.#queue.length;
      this.#queue = [];
      try {
        await this.#append(path, text);
      } catch (err) {
        this.#logger.error({ err, file: path, records }, 'usage records could not be written');
      }
      this.#queuedBytes -= text.length;
      if (this.#droppedInSpell > 0) {
        this.#logger.warn({ file: path, dropped: this.#droppedInSpell }, 'usage records are written again');
        this.#droppedInSpell = 0;
      }
    }
    this.#writing = undefined;
  }

  /** Resolves once every record given so far is written (or failed). */
  async flushed(): Promise<void> {
    while (this.#writing) await this.#writing;
  }
}

/** Sums of one key's records (npm run key -- usage). */
export interface UsageSum {
  requests: number;
  byCode: Record<string, number>;
  wallMs: number;
  cpuMs: number;
  bytesReceived: number;
  bytesSent: number;
  connections: number;
}

/** Sums the records of `key` at or after `since` (and before `until`) in a usage file's text; other lines are skipped. */
export function sumUsage(text: string, key: string, since?: Date, until?: Date): UsageSum {
  const sum: UsageSum = {
    requests: 0,
    byCode: {},
    wallMs: 0,
    cpuMs: 0,
    bytesReceived: 0,
    bytesSent: 0,
    connections: 0,
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let r: Partial<UsageRecord>;
    try {
      r = JSON.parse(line) as Partial<UsageRecord>;
    } catch {
      continue;
    }
    if (r.key !== key || typeof r.time !== 'string') continue;
    const t = new Date(r.time);
    if ((since && t < since) || (until && t >= until)) continue;
    sum.requests++;
    const code = typeof r.code === 'string' ? r.code : 'unknown';
    sum.byCode[code] = (sum.byCode[code] ?? 0) + 1;
    const add = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
    sum.wallMs += add(r.wallMs);
    sum.cpuMs += add(r.cpuMs);
    sum.bytesReceived += add(r.bytesReceived);
    sum.bytesSent += add(r.bytesSent);
    sum.connections += add(r.connections);
  }
  return sum;
}
