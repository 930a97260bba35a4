// Where keys' security points and blocks are kept: one small contract (add,
// blockedUntil, unblock, events), this in-memory store for one instance, and the
// shared ones (Redis, the state file) that keep the same contract.
import type { SecuritySettings } from '../../common/config.js';

/** One request's points, as a key's window keeps them. */
export interface ScoredRequest {
  readonly requestId: string;
  /** Milliseconds since the epoch. */
  readonly at: number;
  /** Points of its navigations, refused methods and slot process (page targets are counted apart). */
  readonly points: number;
  /** Its classes' counts (for `npm run key -- events`). */
  readonly counts: Readonly<Record<string, number>>;
}

/** A block that began with this add: until when, which block of the key it is, and the evidence. */
export interface BlockBegun {
  readonly until: number;
  readonly blocks: number;
  readonly score: number;
  /** The window's requests with points, newest last (their ids are the evidence). */
  readonly requests: readonly ScoredRequest[];
}

export interface ScoreResult {
  /** The window's score once this request is counted. */
  readonly score: number;
  readonly block?: BlockBegun;
}

export interface ScoreInput {
  readonly request: ScoredRequest;
  /** The distinct host:port the page's own connections were refused (each counts once per window). */
  readonly pageTargets: readonly string[];
  readonly threshold: number;
}

export interface KeyEvents {
  readonly requests: readonly ScoredRequest[];
  readonly score: number;
  readonly blockedUntil?: number;
  readonly blocks: number;
}

export interface SecurityStore {
  /** Counts a request's points in the key's window; blocks the key when the score reaches the threshold. */
  add(key: string, input: ScoreInput, settings: SecuritySettings): Promise<ScoreResult>;
  /** When the key's block ends (ms since the epoch), or undefined when it is not blocked. */
  blockedUntil(key: string): Promise<number | undefined>;
  /** Ends the key's block and forgets its window; true when it was blocked. */
  unblock(key: string): Promise<boolean>;
  events(key: string, settings: SecuritySettings): Promise<KeyEvents>;
}

/** Requests with points a key's window keeps (the oldest go first), and distinct page targets. */
export const MAX_SCORED_REQUESTS = 1_000;
export const MAX_PAGE_TARGETS = 10_000;
/** Keys whose windows the memory store keeps (the least recently scored go first; blocks are kept apart). */
export const MAX_SCORED_KEYS = 10_000;
/** A key's count of repeat blocks is forgotten this long after its last block ended. */
export const BLOCK_MEMORY_MS = 86_400_000;

/** The length of a key's n-th block (n ≥ 1): the cool-off, doubled for each repeat, up to the cap. */
export function coolOffMs(n: number, s: Pick<SecuritySettings, 'coolOffMs' | 'coolOffMaxMs'>): number {
  return Math.min(s.coolOffMs * 2 ** Math.min(n - 1, 40), s.coolOffMaxMs);
}

export interface KeyState {
  requests: ScoredRequest[];
  /** host:port → when the page was last refused it. */
  targets: Map<string, number>;
}

export interface BlockState {
  until: number;
  blocks: number;
}

/** The window's score: its requests' points, and page targets at their weight. */
export function windowScore(state: KeyState, now: number, s: SecuritySettings): number {
  const from = now - s.windowMs;
  while (state.requests.length > 0 && (state.requests[0]?.at ?? now) <= from) state.requests.shift();
  for (const [t, at] of state.targets) if (at <= from) state.targets.delete(t);
  let points = 0;
  for (const r of state.requests) points += r.points;
  return points + state.targets.size * s.weights.page;
}

/** The scoring itself, shared by the memory store and the state file's. */
export function scoreInto(
  state: KeyState,
  block: BlockState | undefined,
  input: ScoreInput,
  s: SecuritySettings,
  now: number,
): { score: number; block?: BlockState } {
  const r = input.request;
  if (r.points > 0 || input.pageTargets.length > 0) {
    state.requests.push(r);
    if (state.requests.length > MAX_SCORED_REQUESTS) state.requests.shift();
  }
  for (const t of input.pageTargets) {
    state.targets.delete(t);
    // SECURITY: bounded whatever a page tries; past the cap a new target still counts, pushing out the oldest.
    if (state.targets.size >= MAX_PAGE_TARGETS) state.targets.delete(state.targets.keys().next().value as string);
    state.targets.set(t, now);
  }
  const score = windowScore(state, now, s);
  if (!s.blocking || score < input.threshold) return { score };
  if (block !== undefined && block.until > now) return { score };
  const blocks = block !== undefined && now - block.until < BLOCK_MEMORY_MS ? block.blocks + 1 : 1;
  return { score, block: { until: now + coolOffMs(blocks, s), blocks } };
}

export class MemorySecurityStore implements SecurityStore {
  readonly #keys = new Map<string, KeyState>();
  readonly #blocks = new Map<string, BlockState>();
  /** The requests that made each key's last block (for events). */
  readonly #evidence = new Map<string, readonly ScoredRequest[]>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  #state(key: string): KeyState {
    let st = this.#keys.get(key);
    if (st) this.#keys.delete(key);
    else st = { requests: [], targets: new Map() };
    this.#keys.set(key, st);
    if (this.#keys.size > MAX_SCORED_KEYS) this.#keys.delete(this.#keys.keys().next().value as string);
    return st;
  }

  add(key: string, input: ScoreInput, s: SecuritySettings): Promise<ScoreResult> {
    const now = this.#now();
    const st = this.#state(key);
    const out = scoreInto(st, this.#blocks.get(key), input, s, now);
    if (!out.block) return Promise.resolve({ score: out.score });
    this.#blocks.set(key, out.block);
    const requests = [...st.requests];
    this.#evidence.set(key, requests.slice(-50));
    // A new window starts after the block: the points that caused it are not counted twice.
    st.requests.length = 0;
    st.targets.clear();
    return Promise.resolve({ score: out.score, block: { ...out.block, score: out.score, requests } });
  }

  blockedUntil(key: string): Promise<number | undefined> {
    const b = this.#blocks.get(key);
    return Promise.resolve(b !== undefined && b.until > this.#now() ? b.until : undefined);
  }

  unblock(key: string): Promise<boolean> {
    const b = this.#blocks.get(key);
    const now = this.#now();
    const was = b !== undefined && b.until > now;
    // The count of its blocks stays: a repeat block is still a repeat.
    if (b !== undefined) this.#blocks.set(key, { until: Math.min(b.until, now), blocks: b.blocks });
    this.#keys.delete(key);
    return Promise.resolve(was);
  }

  events(key: string, s: SecuritySettings): Promise<KeyEvents> {
    const now = this.#now();
    const st = this.#keys.get(key) ?? { requests: [], targets: new Map<string, number>() };
    const score = windowScore(st, now, s);
    const b = this.#blocks.get(key);
    return Promise.resolve({
      requests: [...(this.#evidence.get(key) ?? []), ...st.requests],
      score,
      blocks: b?.blocks ?? 0,
      ...(b !== undefined && b.until > now ? { blockedUntil: b.until } : {}),
    });
  }
}
