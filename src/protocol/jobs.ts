// One job: the request, its outcome (the result or the error, each with its
// telemetry) as the slot and the front hold it and as it crosses, and the
// checks the front makes of what comes back.
import {
  type ApiError,
  ERRORS,
  HOUSEKEEPING_CAUSES,
  INTERNAL_CAUSES,
  JOB_PHASES,
  MAX_PAGE_CALLS,
  type ErrorCode,
  type FailureDetails,
  type HousekeepingCause,
  type InternalCause,
  type JobPhase,
} from '../common/errors.js';
import { MAX_REFUSED_HOSTS } from './egress.js';
import type { RequestOptions } from './request-options.js';
import { isSecurityReport, type SecurityReport } from './security.js';
import { hasOnly, isCount, isList, isLogs, isObject, isOptional, isSeconds, isString } from './shape.js';

/** One job, as POST /api/scrape describes it once it is validated. */
export interface JobRequest {
  /** The request this job serves: its context's egress is counted and logged under this id. */
  readonly requestId?: string;
  readonly url: string;
  /** Absent: the reachability check. */
  readonly script?: string;
  readonly outputFormat: 'json' | 'html';
  /** How the page is set up before it loads (checked by the front; checked again before it is applied). */
  readonly options?: RequestOptions;
  /**
   * The upstream proxy this request leaves through, by name (options.proxy or
   * the key's default, checked by the front). SECURITY: a name only; the
   * credentials go to the egress guard at its start (EgressInit), never in a job.
   */
  readonly proxy?: string;
  /** Limits of the request's key below the service's (docs/keys-and-limits.md); absent: the service's. */
  readonly limits?: JobLimits;
  /**
   * SECURITY: the hosts the request's key may reach, as patterns (host-patterns.ts):
   * the egress guard refuses every other connection of the page. Absent: any public host.
   */
  readonly hosts?: readonly string[];
}

/**
 * What a job cost, as the slot measured it (docs/keys-and-limits.md "What a request cost"). The
 * front adds its own figures (CPU from /proc, the guard's counts, its timings).
 */
export interface JobUsage {
  /** CPU time of the request's processes (its slot process and Chromium), in ms. */
  readonly cpuMs?: number;
  /** The highest memory of the request's page (as counted against PAGE_MEMORY_MB), in MiB. */
  readonly pageMemoryPeakMb?: number;
  /** The highest heap of the request's isolate (V8's heap statistics), in MiB. */
  readonly isolateHeapPeakMb?: number;
  readonly bytesReceived?: number;
  readonly bytesSent?: number;
  readonly connections?: number;
}

/** Per-key limits a job runs with instead of the service's settings; each at most the setting. */
export interface JobLimits {
  readonly scriptTimeoutMs?: number;
  readonly navigationTimeoutMs?: number;
  readonly maxResultBytes?: number;
  readonly maxLogLines?: number;
  /** The isolate's memory limit (isolated-vm's memoryLimit), in MiB. */
  readonly scriptMemoryMb?: number;
  /** The page memory watchdog's limit for this request, in MiB. */
  readonly pageMemoryMb?: number;
}

/** Where a job's time went, in milliseconds (lease and isolate overlap). */
export interface JobTimings {
  lease?: number;
  isolate?: number;
  navigation?: number;
  script?: number;
}

/** What a job that succeeded gives the caller: the reply's body is made of it. */
export interface JobResult {
  /** The script's result as JSON text; absent when it returned undefined. */
  readonly json?: string;
  /** For the reachability check: the page summary or its HTML. */
  readonly value?: unknown;
  readonly logs: readonly string[];
  readonly executionTimeMs: number;
}

/**
 * What a job measured and where it ended, whether it succeeded or failed: for the request's log line,
 * metrics, usage and its key's score, never for the caller's body.
 */
export interface JobTelemetry {
  /** Where the job's time went (lease, isolate, navigation, script; ms). */
  readonly timings?: JobTimings;
  /** What the request's context did through the egress guard (EgressStats; the front puts the egress process's in). */
  readonly egress?: Readonly<Record<string, number>>;
  /** What the request cost, as the slot measured it (the front puts the kernel's CPU count in). */
  readonly usage?: JobUsage;
  /** What the slot saw the request try that looks like a probe; it can only raise its own key's score. */
  readonly security?: SecurityReport;
  /** What a failed job was doing when it failed. */
  readonly phase?: JobPhase;
  /** The slot that ran the job (the front's to say). */
  readonly slot?: number;
}

/** A job's outcome: its result or its error, each with what the job measured on the way. */
export type JobOutcome =
  | { readonly ok: true; readonly result: JobResult; readonly telemetry: JobTelemetry }
  | { readonly ok: false; readonly error: ApiError; readonly telemetry: JobTelemetry };

export type FailedJob = Extract<JobOutcome, { readonly ok: false }>;

/** A failed job's outcome. */
export function failedJob(error: ApiError, telemetry: JobTelemetry = {}): FailedJob {
  return { ok: false, error, telemetry };
}

/** The outcome with `more` telemetry: a new value (an outcome is not changed once made). */
export function withTelemetry(outcome: JobOutcome, more: JobTelemetry): JobOutcome {
  return { ...outcome, telemetry: { ...outcome.telemetry, ...more } };
}

/** The telemetry that crosses with a job's answer, either way (a failure adds its phase; the slot is the front's). */
export type WireTelemetry = Pick<JobTelemetry, 'timings' | 'egress' | 'usage' | 'security'>;

/** `t`'s fields that cross, those it has: one copy for the slot's send and the front's receipt alike. */
export function wireTelemetry(t: WireTelemetry): WireTelemetry {
  return {
    ...(t.timings === undefined ? {} : { timings: t.timings }),
    ...(t.egress === undefined ? {} : { egress: t.egress }),
    ...(t.usage === undefined ? {} : { usage: { ...t.usage } }),
    ...(t.security === undefined ? {} : { security: t.security }),
  };
}

/** A successful job as it crosses (a `done` message): its result and its telemetry in one object. */
export interface WireResult extends JobResult, WireTelemetry {
  readonly timings: JobTimings;
}

/** A successful job's outcome in its wire form. */
export function toWireResult(result: JobResult, t: JobTelemetry): WireResult {
  return { ...result, ...wireTelemetry(t), timings: t.timings ?? {} };
}

/** The outcome a `done` message stands for (checked by isWireResult as it crossed). */
export function fromWireResult(w: WireResult): JobOutcome {
  const { json, value, logs, executionTimeMs } = w;
  return {
    ok: true,
    result: {
      ...(json === undefined ? {} : { json }),
      ...(value === undefined ? {} : { value }),
      logs,
      executionTimeMs,
    },
    telemetry: wireTelemetry(w),
  };
}

/** An error as it crosses: its public code and message, and what the reply and metrics need. */
export interface WireError extends WireTelemetry {
  readonly code: ErrorCode;
  readonly message: string;
  readonly logs?: readonly string[];
  readonly timeout?: 'script' | 'navigation';
  /** For the front's log line only (never sent to a caller): what caused a 5xx. */
  readonly detail?: string;
  /** Where and why a script or navigation failed, for the error body. */
  readonly failure?: FailureDetails;
  /** A 503: the service's own work before the request (HOUSEKEEPING_CAUSES) failed; another slot may serve it. */
  readonly housekeeping?: HousekeepingCause;
  /** A 500: why, from a closed set (INTERNAL_CAUSES), for the front's log line and metrics only. */
  readonly internal?: InternalCause;
  /** A 500: what the job was doing, for the front's log line. */
  readonly phase?: JobPhase;
}

/** The fail message of a job whose slot process stopped under it. */
export const RUNNER_STOPPED = 'Internal server error: the script runner stopped; the request was not completed';
/** The fail message of a job whose egress process stopped under it. */
export const EGRESS_STOPPED = 'Internal server error: the egress process stopped; the request was not completed';

/** The most fields an egress summary has (EgressStats has a dozen); more is not one. */
const MAX_EGRESS_FIELDS = 64;

/** JobTimings: each phase a duration in ms, or absent. */
function isTimings(t: unknown): boolean {
  return (
    isObject(t) &&
    hasOnly(t, ['lease', 'isolate', 'navigation', 'script']) &&
    isOptional(t.lease, isSeconds) &&
    isOptional(t.isolate, isSeconds) &&
    isOptional(t.navigation, isSeconds) &&
    isOptional(t.script, isSeconds)
  );
}

/** An egress summary: counts by name (the front reads some by name and logs the whole). */
export function isEgress(e: unknown): boolean {
  return isObject(e) && Object.keys(e).length <= MAX_EGRESS_FIELDS && Object.values(e).every(isCount);
}

function isPageCall(c: unknown): boolean {
  return (
    isObject(c) &&
    hasOnly(c, ['method', 'durationMs', 'outcome', 'error']) &&
    isString(c.method) &&
    isSeconds(c.durationMs) &&
    (c.outcome === 'ok' || c.outcome === 'error' || c.outcome === 'pending') &&
    isOptional(c.error, isString)
  );
}

/** A refused host:port: a DNS name (253) and a port. */
const MAX_REFUSED_HOST_CHARS = 260;

/** FailureDetails, whose fields the front copies into the error body. */
function isFailure(f: unknown): boolean {
  return (
    isObject(f) &&
    hasOnly(f, [
      'phase',
      'finalUrl',
      'line',
      'column',
      'stack',
      'pageCalls',
      'screenshot',
      'screenshotOmitted',
      'refusedHosts',
    ]) &&
    isOptional(f.phase, (v) => v === 'navigation' || v === 'script') &&
    isOptional(f.finalUrl, isString) &&
    isOptional(f.line, isCount) &&
    isOptional(f.column, isCount) &&
    isOptional(f.stack, isString) &&
    // SECURITY: at most the MAX_PAGE_CALLS the slot keeps: an object shared by reference is copied per call.
    isOptional(f.pageCalls, (v) => Array.isArray(v) && v.length <= MAX_PAGE_CALLS && isList(v, isPageCall)) &&
    isOptional(f.screenshot, isString) &&
    isOptional(f.screenshotOmitted, isString) &&
    isOptional(
      f.refusedHosts,
      (v) =>
        Array.isArray(v) &&
        v.length <= MAX_REFUSED_HOSTS &&
        isList(v, (h) => isString(h) && h.length <= MAX_REFUSED_HOST_CHARS),
    )
  );
}

export const USAGE_FIELDS = [
  'cpuMs',
  'pageMemoryPeakMb',
  'isolateHeapPeakMb',
  'bytesReceived',
  'bytesSent',
  'connections',
];

/** JobUsage: each figure a finite amount that is not negative, or absent; no other field. */
function isUsage(u: unknown): boolean {
  return isObject(u) && hasOnly(u, USAGE_FIELDS) && Object.values(u).every(isSeconds);
}

/**
 * What a job without a script answers (JobOutcome.value): the page's HTML, or its summary. SECURITY: nothing
 * else: the front hands it to JSON.stringify, and structured clone sends an object seen before by reference,
 * so a message of a kilobyte that nests one array in pairs expands exponentially in the reply.
 */
function isPageValue(v: unknown): boolean {
  return (
    isString(v) ||
    (isObject(v) &&
      hasOnly(v, ['url', 'finalUrl', 'status', 'ok', 'title']) &&
      isString(v.url) &&
      isString(v.finalUrl) &&
      (v.status === null || isCount(v.status)) &&
      typeof v.ok === 'boolean' &&
      isString(v.title))
  );
}

export function isWireResult(o: unknown): boolean {
  return (
    isObject(o) &&
    hasOnly(o, ['json', 'value', 'logs', 'executionTimeMs', 'timings', 'egress', 'usage', 'security']) &&
    isOptional(o.json, isString) &&
    isOptional(o.value, isPageValue) &&
    isLogs(o.logs) &&
    isSeconds(o.executionTimeMs) &&
    isTimings(o.timings) &&
    isOptional(o.egress, isEgress) &&
    isOptional(o.usage, isUsage) &&
    isOptional(o.security, isSecurityReport)
  );
}

// SECURITY: every field the front reads is checked, not only the code: a
// `timeout` becomes a metric label (any string would make label values without
// end), `egress` is counted per proxy, `failure` is copied into the reply.
export function isWireError(e: unknown): boolean {
  return (
    isObject(e) &&
    hasOnly(e, [
      'code',
      'message',
      'logs',
      'timeout',
      'detail',
      'egress',
      'failure',
      'timings',
      'usage',
      'housekeeping',
      'internal',
      'phase',
      'security',
    ]) &&
    isString(e.code) &&
    Object.hasOwn(ERRORS, e.code) &&
    isString(e.message) &&
    isOptional(e.logs, isLogs) &&
    isOptional(e.timeout, (v) => v === 'script' || v === 'navigation') &&
    isOptional(e.detail, isString) &&
    isOptional(e.egress, isEgress) &&
    isOptional(e.failure, isFailure) &&
    isOptional(e.timings, isTimings) &&
    isOptional(e.usage, isUsage) &&
    // SECURITY: label values and log fields from a closed set only.
    isOptional(e.housekeeping, (v) => (HOUSEKEEPING_CAUSES as readonly unknown[]).includes(v)) &&
    isOptional(e.internal, (v) => (INTERNAL_CAUSES as readonly unknown[]).includes(v)) &&
    isOptional(e.phase, (v) => (JOB_PHASES as readonly unknown[]).includes(v)) &&
    isOptional(e.security, isSecurityReport)
  );
}
