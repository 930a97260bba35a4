// The keys the service accepts: API_KEYS (from the environment) and the key
// file (API_KEYS_FILE), which is re-read when it changes, without a restart.
// Keys are held as SHA-256 digests and compared in constant time.
import { timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Config } from '../../common/config.js';
import type { Logger } from '../../common/log.js';
import { ALL_PROXIES, KeyFileError, hashKey, parseKeyFile, unknownProxies, type KeyRecord } from './keyfile.js';
import { background } from '../../common/background.js';
import { resolvePolicy, type ResolvedPolicy } from './key-policy.js';

/** Who is calling, as the rest of the service sees it: a name and limits, never the key. */
export interface Client {
  readonly name: string;
  readonly rateLimit: number;
  readonly rateLimitWindowMs: number;
  /** This key's own cap on running scripts; undefined: only MAX_CONCURRENCY applies. */
  readonly maxConcurrency: number | undefined;
  /** The upstream proxy its requests leave through when they name none; undefined: directly. */
  readonly defaultProxy: string | undefined;
  /** The proxies it may name in options.proxy: API_KEYS keys every one, key-file keys those listed. */
  readonly allowed: readonly string[] | 'all';
  /** The key's policy (the key file's `policy`); undefined: the service's settings. */
  readonly policy: ResolvedPolicy | undefined;
}

export interface KeyRingOptions {
  readonly envKeys: readonly string[];
  readonly file: string | undefined;
  readonly defaultRateLimit: number;
  readonly defaultRateLimitWindowMs: number;
  readonly logger: Logger;
  /** The names in PROXIES: a key file naming another is refused like any invalid file. */
  readonly proxyNames?: readonly string[];
  /** How often the file's status is polled; rename-over writes are seen too. */
  readonly pollMs?: number;
}

interface Entry {
  readonly digest: Buffer;
  readonly record: KeyRecord;
  /** From the key file (else from API_KEYS). */
  readonly fromFile: boolean;
  /** The record's policy, its host patterns parsed once at load. */
  readonly policy?: ResolvedPolicy | undefined;
}

/**
 * What tells one version of the file from the next: a rename-over write changes
 * the inode. SECURITY: the change time too, which every write moves and no tool
 * can set back: an in-place edit of the same size whose modification time was
 * kept (cp -p, rsync -t, a restored backup) would otherwise go unseen, and a
 * key it revoked stay in force.
 */
const identity = (st: Stats): string => `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;

/**
 * Names of API_KEYS entries, in order: env-1, env-2, …
 * SECURITY: nothing derived from the key, so the logs hold no oracle to test
 * guesses of a short key against. Every instance sharing Redis needs API_KEYS
 * in the same order, since limits are counted by name.
 */
function envName(index: number): string {
  return `env-${index + 1}`;
}

/** Whether the key file in force is the file on disk: "stale" when the last change could not be loaded. */
export type KeyFileStatus = 'ok' | 'stale';

export class KeyRing {
  readonly #opts: KeyRingOptions;
  readonly #envEntries: Entry[];
  #fileList: Entry[] = [];
  /** Every entry by its hex SHA-256; a file entry wins over an API_KEYS entry of the same key. */
  #byDigest = new Map<string, Entry>();
  /** The identity of the file last read (or last found unreadable), to notice the next change. */
  #seen = '';
  #poll: NodeJS.Timeout | undefined;
  #stale = false;
  #reloadFailures = 0;

  /** The keys of the configuration: API_KEYS and, loaded and then watched, API_KEYS_FILE (throws when the file cannot be used). */
  static fromConfig(config: Config, logger: Logger): KeyRing {
    const keys = new KeyRing({
      envKeys: config.apiKeys,
      file: config.apiKeysFile,
      defaultRateLimit: config.rateLimit,
      defaultRateLimitWindowMs: config.rateLimitWindowMs,
      logger,
      proxyNames: config.proxies.map((p) => p.name),
    });
    try {
      keys.start();
    } catch (e) {
      throw new Error(`API_KEYS_FILE ${config.apiKeysFile ?? ''}: ${(e as Error).message}`, { cause: e });
    }
    return keys;
  }

  get #fileEntries(): Entry[] {
    return this.#fileList;
  }

  set #fileEntries(entries: Entry[]) {
    this.#fileList = entries;
    const index = new Map<string, Entry>();
    for (const e of [...this.#envEntries, ...entries]) index.set(e.record.sha256, e);
    this.#byDigest = index;
  }

  constructor(opts: KeyRingOptions) {
    this.#opts = opts;
    this.#envEntries = opts.envKeys.map((k, i) => {
      const sha256 = hashKey(k);
      return {
        digest: Buffer.from(sha256, 'hex'),
        record: { name: envName(i), sha256, active: true },
        fromFile: false,
      };
    });
    this.#fileEntries = [];
  }

  /** Loads the key file (throws when it cannot be read or is invalid) and starts watching it. */
  start(): void {
    const file = this.#opts.file;
    if (file === undefined) return;
    this.#fileEntries = this.#read(file);
    this.#opts.logger.info({ file, keys: this.#fileEntries.length }, 'API key file loaded');
    this.#poll = setInterval(
      () => background(this.#check(file), 'key file check', this.#opts.logger),
      this.#opts.pollMs ?? 500,
    );
    this.#poll.unref();
  }

  close(): void {
    clearInterval(this.#poll);
    this.#poll = undefined;
  }

  /** The number of keys that are accepted now. */
  get activeKeys(): number {
    return [...this.#envEntries, ...this.#fileEntries].filter((e) => e.record.active).length;
  }

  /** "stale" from a failed reload (or a missing file) until the next good one. */
  get fileStatus(): KeyFileStatus {
    return this.#stale ? 'stale' : 'ok';
  }

  /** Reloads of the key file that failed, since start. */
  get reloadFailures(): number {
    return this.#reloadFailures;
  }

  /**
   * Re-reads the key file now. On any problem the keys loaded before stay in
   * force, except those the new file, if it is JSON at all, no longer lists as
   * active: a revocation counts even in a file that is otherwise broken.
   */
  reload(): void {
    const file = this.#opts.file;
    if (file === undefined) return;
    let text: string | undefined;
    try {
      this.#seen = identity(statSync(file));
      text = readFileSync(file, 'utf8');
      this.#fileEntries = entriesOf(text, this.#opts.proxyNames ?? []);
      this.#stale = false;
      this.#opts.logger.info({ file, keys: this.#fileEntries.length }, 'API key file reloaded');
    } catch (e) {
      this.#failed();
      const revoked = text === undefined ? 0 : this.#revokeUnlisted(text);
      this.#opts.logger.error(
        { file, err: (e as Error).message, keptKeys: this.#fileEntries.length, revoked, keys: 'stale' },
        'API key file not reloaded; the keys loaded before stay in force, but for those it no longer lists as active',
      );
    }
  }

  /**
   * The client a key belongs to, or undefined when it is unknown or inactive.
   * SECURITY: looked up by the key's SHA-256, then that one entry is compared
   * in constant time. The lookup's timing depends on the digest of the guess
   * only, from which nothing about any key follows (that would take a SHA-256
   * preimage). Comparing every entry instead would cost O(keys) for every wrong
   * key, from anyone.
   */
  verify(candidate: string): Client | undefined {
    const digest = hashKey(candidate);
    const entry = this.#byDigest.get(digest);
    if (entry === undefined || !timingSafeEqual(Buffer.from(digest, 'hex'), entry.digest)) return undefined;
    const found: KeyRecord = entry.record;
    if (!found.active) return undefined;
    return {
      name: found.name,
      rateLimit: found.rateLimit ?? this.#opts.defaultRateLimit,
      rateLimitWindowMs: found.rateLimitWindowMs ?? this.#opts.defaultRateLimitWindowMs,
      maxConcurrency: found.maxConcurrency,
      defaultProxy: found.proxy,
      // API_KEYS keys (no record of their own in a file) may use every proxy; a key file grants them one by one.
      allowed: !entry.fromFile || found.proxies?.includes(ALL_PROXIES) ? 'all' : (found.proxies ?? []),
      policy: entry.policy,
    };
  }

  /** Re-reads the file when its identity differs from the one last seen. */
  async #check(file: string): Promise<void> {
    const seen = await stat(file).then(identity, () => 'missing');
    if (seen === this.#seen) return;
    this.#seen = seen;
    if (seen === 'missing') {
      this.#failed();
      this.#opts.logger.error(
        { file, keptKeys: this.#fileEntries.length },
        'API key file is gone; the keys loaded before stay in force',
      );
      return;
    }
    this.reload();
  }

  #read(file: string): Entry[] {
    // The identity is taken before the read, so a write during the read is seen at the next check.
    this.#seen = identity(statSync(file));
    return entriesOf(readFileSync(file, 'utf8'), this.#opts.proxyNames ?? []);
  }

  #failed(): void {
    this.#stale = true;
    this.#reloadFailures++;
  }

  /**
   * From a file that failed to load: when it is JSON with a keys array, every
   * key in force that it does not list with "active": true is refused from now
   * on. SECURITY: fail closed for revocations; additions wait for a good file.
   */
  #revokeUnlisted(text: string): number {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return 0;
    }
    const listed = (raw as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(listed)) return 0;
    const stillActive = new Set<string>();
    for (const k of listed as unknown[]) {
      const r = k as { sha256?: unknown; active?: unknown } | null;
      if (typeof r?.sha256 === 'string' && r.active === true) stillActive.add(r.sha256);
    }
    let revoked = 0;
    this.#fileEntries = this.#fileEntries.map((e) => {
      if (!e.record.active || stillActive.has(e.record.sha256)) return e;
      revoked++;
      return { ...e, record: { ...e.record, active: false } };
    });
    return revoked;
  }
}

function entriesOf(text: string, proxyNames: readonly string[]): Entry[] {
  const file = parseKeyFile(text);
  const unknown = unknownProxies(file, proxyNames);
  if (unknown.length > 0) throw new KeyFileError(unknown.join('; '));
  return file.keys.map((record) => ({
    digest: Buffer.from(record.sha256, 'hex'),
    record,
    fromFile: true,
    policy: resolvePolicy(record.policy),
  }));
}
