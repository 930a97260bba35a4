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
 * Writes usage records where USAGE_LOG says: one JSON line each. A file is
 * appended to in order, one write at a time; a write that fails is logged and
 * the record is lost, never the reply.
 */
export class UsageLog {
  readonly #to: Config['usageLog'];
  readonly #logger: Logger;
  #tail: Promise<void> = Promise.resolve();

  constructor(config: Pick<Config, 'usageLog'>, logger: Logger) {
    this.#to = config.usageLog;
    this.#logger = logger;
  }

  record(r: UsageRecord): void {
    const to = this.#to;
    if (to.to === 'off') return;
    if (to.to === 'stdout') {
      this.#logger.info({ usage: r }, 'usage');
      return;
    }
    const line = `${JSON.stringify(r)}\n`;
    this.#tail = this.#tail
      .then(() => appendFile(to.path, line, { mode: 0o600 }))
      .catch((err: unknown) => this.#logger.error({ err, file: to.path }, 'a usage record could not be written'));
  }

  /** Resolves once every record given so far is written (or failed). */
  flushed(): Promise<void> {
    return this.#tail;
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
