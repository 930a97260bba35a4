// Keys' security blocks without Redis: scored in this instance's memory, and
// each key's block and latest scored requests kept in a state file beside the
// key file (`<key file>.security.json`), so a restart keeps a block and
// `npm run key -- events / unblock` can read and end it. The service reads the
// file again when it changes (an unblock by the key tool takes effect within
// STATE_RECHECK_MS).
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { SecuritySettings } from '../../common/config.js';
import {
  scoreInto,
  windowScore,
  type BlockState,
  type KeyEvents,
  type KeyState,
  type ScoredRequest,
  type ScoreInput,
  type ScoreResult,
  type SecurityStore,
} from './security-store.js';

/** How often, at most, the service looks whether the state file changed. */
export const STATE_RECHECK_MS = 1_000;
/**
 * How long a scored request waits to be written with the others scored meanwhile (one write of
 * the whole file for all of them). A block or an unblock is written at once.
 */
export const STATE_WRITE_MS = 1_000;
/** The scored requests the state file keeps per key, newest last (`npm run key -- events`). */
export const MAX_FILE_REQUESTS = 50;
/** The keys the state file keeps at most: past it, those neither blocked nor ever blocked and scored longest ago go. */
export const MAX_FILE_KEYS = 10_000;

export interface SecurityStateFile {
  readonly version: 1;
  readonly keys: Record<string, { until: number; blocks: number; requests: ScoredRequest[] }>;
}

/** The state file of a key file. */
export function securityStatePath(keyFile: string): string {
  return `${keyFile}.security.json`;
}

function parseSecurityState(text: string): SecurityStateFile {
  try {
    const data = JSON.parse(text) as SecurityStateFile;
    if (data.version === 1 && typeof data.keys === 'object' && data.keys !== null) return data;
  } catch {
    // missing or unreadable: no blocks
  }
  return { version: 1, keys: {} };
}

export function readSecurityState(path: string): SecurityStateFile {
  try {
    return parseSecurityState(readFileSync(path, 'utf8'));
  } catch {
    return { version: 1, keys: {} };
  }
}

/** The state file's text. */
function stateText(data: SecurityStateFile): string {
  return `${JSON.stringify(data, null, 1)}\n`;
}

/** Writes text `text` as the whole file at once (a reader never sees half of it), readable by its owner only. */
function writeText(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, path);
}

/** Writes the whole file at once (a reader never sees half of it), readable by its owner only. */
export function writeSecurityState(path: string, data: SecurityStateFile): void {
  writeText(path, stateText(data));
}

/** Drops the keys past `max`: first those never blocked, scored longest ago; a key blocked or ever blocked stays. */
function bound(data: SecurityStateFile, max: number): void {
  const names = Object.keys(data.keys);
  if (names.length <= max) return;
  const last = (k: string): number => data.keys[k]?.requests.at(-1)?.at ?? 0;
  const droppable = names.filter((k) => (data.keys[k]?.blocks ?? 0) === 0).sort((a, b) => last(a) - last(b));
  for (const k of droppable.slice(0, names.length - max)) delete data.keys[k];
}

export class FileSecurityStore implements SecurityStore {
  readonly #path: string;
  readonly #now: () => number;
  readonly #windows = new Map<string, KeyState>();
  #state: SecurityStateFile;
  /** The file's text as last read or written (compared whole: a file's times have a coarse grain). */
  #version = '';
  #checkedAt = -Infinity;
  /** Keys whose scored requests are not in the file yet (written within STATE_WRITE_MS). */
  readonly #unsaved = new Set<string>();
  #writeTimer: NodeJS.Timeout | undefined;
  readonly #maxKeys: number;

  /** Told once when the file cannot be written (a read-only mount): blocks then live in memory only. */
  readonly #onWriteError: ((e: unknown) => void) | undefined;
  #writeFailed = false;

  constructor(
    path: string,
    now: () => number = Date.now,
    onWriteError?: (e: unknown) => void,
    maxKeys: number = MAX_FILE_KEYS,
  ) {
    this.#path = path;
    this.#now = now;
    this.#onWriteError = onWriteError;
    this.#maxKeys = maxKeys;
    this.#version = this.#read();
    this.#state = parseSecurityState(this.#version);
  }

  #read(): string {
    try {
      return readFileSync(this.#path, 'utf8');
    } catch {
      return '';
    }
  }

  /** Reads the file again when another process (the key tool) changed it. */
  #fresh(force = false): void {
    const now = performance.now();
    if (!force && now - this.#checkedAt < STATE_RECHECK_MS) return;
    this.#checkedAt = now;
    const v = this.#read();
    if (v === this.#version) return;
    this.#version = v;
    const before = this.#state;
    this.#state = parseSecurityState(v);
    // An unblock forgets the key's window, as it does in the other stores.
    for (const [k, v] of Object.entries(this.#state.keys))
      if ((before.keys[k]?.until ?? 0) > v.until) this.#windows.delete(k);
    // Requests scored here and not written yet stay (the key tool changes a block, never a key's requests).
    for (const k of this.#unsaved) {
      const mine = before.keys[k];
      if (!mine) continue;
      const theirs = this.#state.keys[k];
      this.#state.keys[k] = theirs ? { ...theirs, requests: mine.requests } : mine;
    }
  }

  /**
   * Saves the state: at once for a block or an unblock (a restart and the key tool see it), else
   * with what else is scored within STATE_WRITE_MS, in one write. The text written is kept, to
   * know the file by: it is not read back.
   */
  #save(now: boolean): void {
    if (!now) {
      this.#writeTimer ??= setTimeout(() => this.#write(), STATE_WRITE_MS);
      this.#writeTimer.unref();
      return;
    }
    this.#write();
  }

  #write(): void {
    clearTimeout(this.#writeTimer);
    this.#writeTimer = undefined;
    // What the key tool wrote since the last look is taken in first, or this write would undo it.
    this.#fresh(true);
    bound(this.#state, this.#maxKeys);
    const text = stateText(this.#state);
    this.#unsaved.clear();
    try {
      writeText(this.#path, text);
      this.#version = text;
    } catch (e) {
      // Scoring and blocking go on in memory; what the file holds is older.
      if (!this.#writeFailed) this.#onWriteError?.(e);
      this.#writeFailed = true;
    }
  }

  #window(key: string): KeyState {
    let w = this.#windows.get(key);
    if (!w) {
      w = { requests: [], targets: new Map() };
      this.#windows.set(key, w);
    }
    return w;
  }

  add(key: string, input: ScoreInput, s: SecuritySettings): Promise<ScoreResult> {
    this.#fresh();
    const now = this.#now();
    const w = this.#window(key);
    const entry = this.#state.keys[key] ?? { until: 0, blocks: 0, requests: [] };
    const block: BlockState | undefined = entry.blocks > 0 ? { until: entry.until, blocks: entry.blocks } : undefined;
    const out = scoreInto(w, block, input, s, now);
    const scored = input.request.points > 0 || input.pageTargets.length > 0;
    if (scored) {
      entry.requests.push(input.request);
      if (entry.requests.length > MAX_FILE_REQUESTS)
        entry.requests.splice(0, entry.requests.length - MAX_FILE_REQUESTS);
    }
    let result: ScoreResult = { score: out.score };
    if (out.block) {
      entry.until = out.block.until;
      entry.blocks = out.block.blocks;
      result = { score: out.score, block: { ...out.block, score: out.score, requests: [...w.requests] } };
      w.requests.length = 0;
      w.targets.clear();
    }
    if (scored || out.block) {
      this.#state.keys[key] = entry;
      this.#unsaved.add(key);
      this.#save(out.block !== undefined);
    }
    return Promise.resolve(result);
  }

  blockedUntil(key: string): Promise<number | undefined> {
    this.#fresh();
    const until = this.#state.keys[key]?.until ?? 0;
    return Promise.resolve(until > this.#now() ? until : undefined);
  }

  unblock(key: string): Promise<boolean> {
    this.#fresh();
    const entry = this.#state.keys[key];
    const now = this.#now();
    this.#windows.delete(key);
    if (!entry || entry.until <= now) return Promise.resolve(false);
    entry.until = now;
    this.#save(true);
    return Promise.resolve(true);
  }

  events(key: string, s: SecuritySettings): Promise<KeyEvents> {
    this.#fresh();
    const now = this.#now();
    const entry = this.#state.keys[key];
    const w = this.#windows.get(key);
    return Promise.resolve({
      requests: entry?.requests ?? [],
      score: w ? windowScore(w, now, s) : 0,
      blocks: entry?.blocks ?? 0,
      ...(entry && entry.until > now ? { blockedUntil: entry.until } : {}),
    });
  }
}
