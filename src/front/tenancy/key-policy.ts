// A key's policy (the key file's `policy`): what one key's requests may take
// and where they may go. Every field is optional and falls back to the
// service's setting; a value above the service's setting is cut to it, so a
// policy only ever narrows (docs/keys-and-limits.md).
import type { Config } from '../../common/config.js';
import { ApiError, scrapingFailed } from '../../common/errors.js';
import { hostAllowed, MAX_HOST_PATTERNS, parseHostPattern, type HostPattern } from '../../protocol/host-patterns.js';
import type { JobLimits } from '../../protocol/jobs.js';
import { REQUEST_OPTION_NAMES, type RequestOptions } from '../../protocol/request-options.js';

export const OUTPUT_FORMATS = ['json', 'html'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];
export type RequestOptionName = (typeof REQUEST_OPTION_NAMES)[number];

/** The numeric limits a policy may lower, with the service setting each falls back to and its bounds. */
export const POLICY_LIMITS = {
  scriptTimeoutMs: { setting: 'SCRIPT_TIMEOUT_MS', min: 100, max: 600_000 },
  navigationTimeoutMs: { setting: 'NAVIGATION_TIMEOUT_MS', min: 100, max: 600_000 },
  maxResultBytes: { setting: 'MAX_RESULT_BYTES', min: 1024, max: 256 * 1024 * 1024 },
  maxLogLines: { setting: 'MAX_LOG_LINES', min: 1, max: 100_000 },
  scriptMemoryMb: { setting: 'SCRIPT_MEMORY_MB', min: 16, max: 4096 },
  pageMemoryMb: { setting: 'PAGE_MEMORY_MB', min: 64, max: 65_536 },
} as const satisfies Record<keyof JobLimits & keyof Config, { setting: string; min: number; max: number }>;
export type PolicyLimit = keyof typeof POLICY_LIMITS;

export interface KeyPolicy extends Partial<Record<PolicyLimit, number>> {
  /** The request options its requests may set (absent: every one). */
  readonly options?: readonly RequestOptionName[];
  /** The output formats its requests may ask for (absent: both). */
  readonly outputFormats?: readonly OutputFormat[];
  /** The hosts its requests may reach, as patterns (absent: every public host). */
  readonly hosts?: readonly string[];
  /** Security points within SECURITY_WINDOW_MS at which the key is blocked: at most SECURITY_THRESHOLD. */
  readonly securityThreshold?: number;
}

/** The points at which a key is blocked: its policy's, cut to the service's (a policy only lowers it). */
export function securityThreshold(policy: KeyPolicy | undefined, config: Config): number {
  const own = policy?.securityThreshold;
  return own === undefined ? config.security.threshold : Math.min(own, config.security.threshold);
}

/** A policy ready to apply: its host patterns parsed. */
export interface ResolvedPolicy {
  readonly policy: KeyPolicy;
  readonly hosts?: readonly HostPattern[];
}

/**
 * Checks a policy as the key file holds it; returns it rebuilt from known
 * fields, and pushes one problem per bad field ("keys[2].policy.hosts: …").
 */
export function parseKeyPolicy(raw: unknown, at: string, problems: string[]): KeyPolicy | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problems.push(`${at}: an object`);
    return undefined;
  }
  const r = raw as Record<string, unknown>;
  const out: { -readonly [K in keyof KeyPolicy]: KeyPolicy[K] } = {};
  for (const k of Object.keys(r))
    if (!(k in POLICY_LIMITS) && k !== 'options' && k !== 'outputFormats' && k !== 'hosts' && k !== 'securityThreshold')
      problems.push(`${at}.${k}: not a policy field`);
  for (const [name, { min, max }] of Object.entries(POLICY_LIMITS) as [PolicyLimit, { min: number; max: number }][]) {
    const v = r[name];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      problems.push(`${at}.${name}: a whole number from ${min} to ${max}`);
    else out[name] = v;
  }
  if (r.securityThreshold !== undefined) {
    const v = r.securityThreshold;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 1_000_000)
      problems.push(`${at}.securityThreshold: a whole number from 1 to 1000000`);
    else out.securityThreshold = v;
  }
  if (r.options !== undefined) {
    const names = REQUEST_OPTION_NAMES as readonly string[];
    if (!Array.isArray(r.options) || !r.options.every((o) => typeof o === 'string' && names.includes(o)))
      problems.push(`${at}.options: an array of request option names (${REQUEST_OPTION_NAMES.join(', ')})`);
    else out.options = [...new Set(r.options as RequestOptionName[])];
  }
  if (r.outputFormats !== undefined) {
    if (
      !Array.isArray(r.outputFormats) ||
      r.outputFormats.length === 0 ||
      !r.outputFormats.every((f) => (OUTPUT_FORMATS as readonly unknown[]).includes(f))
    )
      problems.push(`${at}.outputFormats: a non-empty array of "json" and "html"`);
    else out.outputFormats = [...new Set(r.outputFormats as OutputFormat[])];
  }
  if (r.hosts !== undefined) {
    if (
      !Array.isArray(r.hosts) ||
      r.hosts.length === 0 ||
      r.hosts.length > MAX_HOST_PATTERNS ||
      !r.hosts.every((h) => typeof h === 'string' && parseHostPattern(h) !== undefined)
    )
      problems.push(
        `${at}.hosts: a non-empty array of at most ${MAX_HOST_PATTERNS} host patterns ` +
          `("example.com", "*.example.com", "example.com:8443"; lower case, IDNs as xn--)`,
      );
    else out.hosts = [...new Set(r.hosts as string[])];
  }
  return out;
}

export function resolvePolicy(policy: KeyPolicy | undefined): ResolvedPolicy | undefined {
  if (policy === undefined) return undefined;
  return {
    policy,
    ...(policy.hosts ? { hosts: policy.hosts.map((h) => parseHostPattern(h) as HostPattern) } : {}),
  };
}

/** The limits a key's job runs with: each the policy's, cut to the service's setting; absent when none is lowered. */
export function jobLimits(resolved: ResolvedPolicy | undefined, config: Config): JobLimits | undefined {
  if (resolved === undefined) return undefined;
  const out: { -readonly [K in keyof JobLimits]: JobLimits[K] } = {};
  let any = false;
  for (const name of Object.keys(POLICY_LIMITS) as PolicyLimit[]) {
    const v = resolved.policy[name];
    if (v !== undefined && v < config[name]) {
      out[name] = v;
      any = true;
    }
  }
  return any ? out : undefined;
}

/**
 * Refuses, before anything is queued, a request that asks more than its key
 * allows: 400 INVALID_OPTIONS naming the field and the key's limit, or 400
 * SCRAPING_FAILED for a URL outside the key's hosts.
 */
export function checkAgainstPolicy(
  resolved: ResolvedPolicy | undefined,
  req: { readonly url: string; readonly outputFormat: OutputFormat; readonly options?: RequestOptions },
  config: Config,
): void {
  if (resolved === undefined) return;
  const { policy } = resolved;
  if (policy.outputFormats && !policy.outputFormats.includes(req.outputFormat))
    throw new ApiError(
      'INVALID_OPTIONS',
      `Invalid options: outputFormat "${req.outputFormat}" is not allowed for this key (it may use ${policy.outputFormats.join(', ')})`,
    );
  if (policy.options && req.options)
    for (const name of Object.keys(req.options))
      if (!(policy.options as readonly string[]).includes(name))
        throw new ApiError('INVALID_OPTIONS', `Invalid options: options.${name} is not allowed for this key`);
  const nav = req.options?.navigationTimeoutMs;
  const keyNav = policy.navigationTimeoutMs;
  if (nav !== undefined && nav !== 0 && keyNav !== undefined && keyNav < config.navigationTimeoutMs && nav > keyNav)
    throw new ApiError(
      'INVALID_OPTIONS',
      `Invalid options: options.navigationTimeoutMs ${nav} is above this key's limit of ${keyNav} ms`,
    );
  if (resolved.hosts) {
    const u = new URL(req.url);
    const port = u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : Number(u.port);
    if (!hostAllowed(resolved.hosts, u.hostname, port)) throw scrapingFailed(`${u.host} is outside this key's hosts`);
  }
}
