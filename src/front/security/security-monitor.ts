// Watches what each key's scripts try: gathers a request's security events (its
// slot's report, the egress guard's refusals, its slot process's end), scores
// them against the key's window, blocks a key past its threshold, and refuses a
// blocked key's requests before they reach a slot (docs/security.md
// "Monitoring and blocking").
import type { SecuritySettings } from '../../common/config.js';
import { ApiError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import {
  SecurityRecord,
  type EgressRefusalKind,
  type SecurityClass,
  type SecurityReport,
} from '../../protocol/security.js';
import type { SecurityStore } from './security-store.js';

/** Distinct page targets one request counts (the rest of its refusals are counted, not scored apart). */
export const MAX_PAGE_TARGETS_PER_REQUEST = 256;
/** Finished requests whose late egress refusals still count for their key. */
export const MAX_FINISHED = 10_000;

interface Running {
  readonly key: string;
  readonly record: SecurityRecord;
  readonly pageTargets: Set<string>;
}

export interface SecurityMetrics {
  countSecurityEvents(key: string, byClass: Partial<Record<SecurityClass, number>>): void;
  countKeyBlock(key: string): void;
}

export interface FinishedRequest {
  /** Counts by class for the request's log line (absent: none). */
  readonly security?: Partial<Record<SecurityClass, number>>;
}

export class SecurityMonitor {
  readonly #settings: SecuritySettings;
  readonly #store: SecurityStore;
  readonly #logger: Logger;
  readonly #metrics: SecurityMetrics | undefined;
  readonly #now: () => number;
  /** Requests in flight by id; an id two keys share (X-Request-Id is the caller's) is attributed to neither. */
  readonly #running = new Map<string, Running[]>();
  /**
   * Requests finished lately, by id (the last MAX_FINISHED), each with its key: an egress
   * refusal that crosses its request's end (two processes, two pipes) still counts for that key.
   */
  readonly #finished = new Map<string, { key: string; threshold: number } | undefined>();
  #late: Promise<unknown> = Promise.resolve();

  constructor(opts: {
    settings: SecuritySettings;
    store: SecurityStore;
    logger: Logger;
    metrics?: SecurityMetrics;
    /** Milliseconds since the epoch (tests give the store's clock). */
    now?: () => number;
  }) {
    this.#now = opts.now ?? Date.now;
    this.#settings = opts.settings;
    this.#store = opts.store;
    this.#logger = opts.logger;
    this.#metrics = opts.metrics;
  }

  get store(): SecurityStore {
    return this.#store;
  }

  /** Throws 403 KEY_BLOCKED when the key is blocked now. */
  async check(key: string): Promise<void> {
    const until = await this.#store.blockedUntil(key);
    if (until === undefined) return;
    const retryAfter = Math.max(1, Math.ceil((until - this.#now()) / 1000));
    throw new ApiError('KEY_BLOCKED', `Key blocked until ${new Date(until).toISOString()}`, {
      headers: { 'Retry-After': String(retryAfter) },
    });
  }

  /** A request of `key` is about to run: its events are gathered from now until finish(). */
  begin(requestId: string, key: string): Running {
    const entry: Running = { key, record: new SecurityRecord(), pageTargets: new Set() };
    const list = this.#running.get(requestId);
    if (list) list.push(entry);
    else this.#running.set(requestId, [entry]);
    return entry;
  }

  /**
   * The egress guard refused a connection of request `requestId`: a page-made
   * event (the guard cannot tell the script's fetch from the page's own).
   * SECURITY: counted only when the id names one key's running request.
   */
  egressRefused(requestId: string, kind: EgressRefusalKind, host: string, port: number): void {
    const list = this.#running.get(requestId);
    if (!list || list.length === 0) {
      const done = this.#finished.get(requestId);
      if (done !== undefined) this.#scoreLate(requestId, done, kind, `${host.toLowerCase()}:${port}`);
      return;
    }
    if (list.some((e) => e.key !== list[0]?.key)) return;
    const entry = list[0] as Running;
    const target = `${host.toLowerCase()}:${port}`;
    entry.record.add(kind, 'page', target);
    if (entry.pageTargets.size < MAX_PAGE_TARGETS_PER_REQUEST) entry.pageTargets.add(target);
  }

  /**
   * The request is over: the slot's report (events only it saw) and whether its
   * slot process died under it are added, the key is scored, and blocked when
   * it reaches its threshold. Returns the counts for the request's log line.
   */
  async finish(
    requestId: string,
    entry: Running,
    end: { report?: SecurityReport; slotDied?: string; threshold: number },
  ): Promise<FinishedRequest> {
    const list = this.#running.get(requestId);
    const at = list?.indexOf(entry) ?? -1;
    if (list && at >= 0) list.splice(at, 1);
    if (list?.length === 0) this.#running.delete(requestId);
    const { record, key } = entry;
    // An id that another key's request holds now, or held lately, is remembered as nobody's.
    const shared =
      (list?.some((e) => e.key !== key) ?? false) ||
      (this.#finished.has(requestId) && this.#finished.get(requestId)?.key !== key);
    this.#finished.delete(requestId);
    this.#finished.set(requestId, shared ? undefined : { key, threshold: end.threshold });
    if (this.#finished.size > MAX_FINISHED) this.#finished.delete(this.#finished.keys().next().value as string);
    // SECURITY: the slot's report can only raise its own key's score.
    if (end.report) record.addReport(end.report);
    if (end.slotDied !== undefined) record.add('slot-died', 'process', end.slotDied);
    if (record.empty) return {};
    const byClass = record.byClass();
    this.#metrics?.countSecurityEvents(key, byClass);
    const { details, omitted } = record.details();
    this.#logger.warn({ requestId, keyName: key, security: byClass, details, omitted }, 'security events');
    await this.#score(requestId, key, record, [...entry.pageTargets], end.threshold);
    return { security: byClass };
  }

  /** Scores what arrived after its request ended: one page target, at its key's threshold. */
  #scoreLate(
    requestId: string,
    done: { key: string; threshold: number },
    kind: EgressRefusalKind,
    target: string,
  ): void {
    const r = new SecurityRecord();
    r.add(kind, 'page', target);
    this.#metrics?.countSecurityEvents(done.key, r.byClass());
    this.#late = this.#late.then(() => this.#score(requestId, done.key, r, [target], done.threshold));
  }

  /** Settles when late refusals given so far are scored (tests). */
  settled(): Promise<unknown> {
    return this.#late;
  }

  async #score(
    requestId: string,
    key: string,
    record: SecurityRecord,
    pageTargets: readonly string[],
    threshold: number,
  ): Promise<void> {
    const byClass = record.byClass();
    const w = this.#settings.weights;
    let points = 0;
    for (const t of record.tallies()) {
      if (t.via === 'navigation') points += t.n * w.navigation;
      else if (t.via === 'script') points += t.n * w.method;
      else if (t.via === 'process') points += t.n * w.slot;
    }
    try {
      const result = await this.#store.add(
        key,
        {
          request: { requestId, at: this.#now(), points, counts: byClass },
          pageTargets,
          threshold,
        },
        this.#settings,
      );
      if (result.block) {
        this.#metrics?.countKeyBlock(key);
        const counts: Record<string, number> = {};
        for (const r of result.block.requests)
          for (const [c, n] of Object.entries(r.counts)) counts[c] = (counts[c] ?? 0) + n;
        this.#logger.warn(
          {
            keyName: key,
            until: new Date(result.block.until).toISOString(),
            block: result.block.blocks,
            score: result.block.score,
            threshold,
            counts,
            // The evidence: the requests whose events make up the score (their own log lines say what they tried).
            requestIds: result.block.requests.slice(-20).map((r) => r.requestId),
          },
          'key blocked',
        );
      }
    } catch (e) {
      this.#logger.error({ err: String(e), keyName: key }, 'security events could not be scored');
    }
  }
}
