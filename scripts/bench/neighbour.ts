// npm run bench -- --neighbour [--chromium shell|full] [out.json]
//
// The noisy-neighbour bench (issue 13): one key sends an innocent script in a
// loop while another key runs a parade of hostile scripts, one at a time (so
// slots are not what the innocent key waits for). The innocent key's latency is
// measured alone and then beside the attacker in the same run; /health is
// polled throughout, and the memory of the whole process tree (front,
// slot processes, every Chromium) is sampled against SERVICE_MEMORY_MB. The parade
// ends with the console-flood pair: two floods at once, sent while the
// innocent key is idle, so that they take both slots. Then the attacker holds
// every slot with requests of known length while the innocent key is idle,
// and the innocent key's wait is measured against the attacker's first
// running request's end (issue 45 point 3).
import { loadavg } from 'node:os';
import { memoryPlan, type ChromiumMode } from '../../src/common/config.js';
import { BUSY_UNTIL_FLOODED, FORGED_FUNCTION } from './attacks.js';
import { QUICK } from './args.js';
import { pct } from './measure.js';
import { TreeSampler } from './tree-sampler.js';

export interface NeighbourDeps {
  readonly mode: ChromiumMode;
  startService(env: Record<string, string>): Promise<{ base: string; child: { pid?: number }; stop(): Promise<void> }>;
  call(
    base: string,
    body: unknown,
    key: string,
  ): Promise<{ ms: number; status: number; error?: string; timing?: Record<string, number> }>;
  /** One GET /health; its latency in ms. */
  health(base: string): Promise<number>;
  readonly pageUrl: string;
  readonly fixturePort: number;
  /** Only the attacks whose name matches (to study one); all by default. */
  readonly attacks?: RegExp;
  /** How many times the attacker runs its parade while the innocent key is measured beside it; 1 by default. */
  readonly parades?: number;
}

const INNOCENT_KEY = 'neighbour-innocent-0123456789';
const ATTACKER_KEY = 'neighbour-attacker-0123456789';
/** Two slots: one for the innocent key, one for the attacker. */
const CONCURRENCY = 2;
/** Innocent requests alone: the p95 every ratio divides by. */
const INNOCENT_N = QUICK ? 10 : 60;
/**
 * Innocent requests started beside each attack, per parade: an attack is run
 * again until the innocent key has this many beside it (at most MAX_REPEATS
 * times). A memory bomb ends in about a second, beside 6–10 innocent requests:
 * their "p95" was their slowest one, and which attack went over 2 × changed
 * from run to run.
 */
const BESIDE_EACH = QUICK ? 4 : 20;
const MAX_REPEATS = QUICK ? 2 : 8;
const INNOCENT_SCRIPT = 'return await page.title()';
/** Between two innocent requests. */
const INNOCENT_PAUSE_MS = 100;
const SAMPLE_EVERY_MS = 200;
/** The tree's memory: each sample costs the kernel up to a few hundred ms of CPU beside a big slot (tree-sampler.ts). */
const MEMORY_EVERY_MS = 500;
/**
 * How long the innocent key is left idle before the attacker takes every slot:
 * past the scheduler's grace for a key between two requests (ACTIVE_GRACE_MS,
 * 1 s), during which a slot is kept for it.
 */
const IDLE_BEFORE_TAKING_MS = 1500;
/** Between the attacker's requests that take the slots and the innocent key's next one: time for them to be admitted. */
const HEAD_START_MS = 300;

const PAGE_CONSOLE_FLOOD =
  "page.on('console', () => {}); await page.evaluate(() => { for (let i = 0; i < 2e5; i++) console.log('y'.repeat(1000)) })";

/** The parade: each kind of attack the issue names, run in turn by the attacker key. */
export const PARADE: Readonly<Record<string, string>> = {
  'page function source (200k characters)': `${FORGED_FUNCTION}
    const src = 'async'.repeat(40000) + 'x(){return 7}';
    for (;;) await page.evaluate(forged(src));`,
  'page function source (1.2M characters)': `${FORGED_FUNCTION}
    const src = 'async'.repeat(240000) + 'x(){return 7}';
    for (;;) await page.evaluate(forged(src)).catch(() => 0);`,
  'console flood beside a busy isolate': `page.on('console', () => {});
    page.evaluate(() => {
      const s = 'y'.repeat(256 * 1024);
      for (let i = 0; i < 2000; i++) console.log(s);
      history.pushState(null, '', '#flooded');
    }).catch(() => 0);
    ${BUSY_UNTIL_FLOODED}`,
  'exposed-function flood beside a busy isolate': `await page.exposeFunction('hit', (i) => i);
    page.evaluate(() => {
      for (let i = 0; i < 100000; i++) window.hit(i).catch(() => 0);
      history.pushState(null, '', '#flooded');
    }).catch(() => 0);
    ${BUSY_UNTIL_FLOODED}`,
  'page memory bomb (JS heap)':
    'await page.evaluate(() => { const a = []; for (;;) a.push(new Array(1e5).fill(Math.random())) })',
  'page memory bomb (typed arrays)':
    'await page.evaluate(() => { const a = []; for (;;) a.push(new Uint8Array(16 << 20).fill(1)) })',
  'page memory bomb (canvases)': `await page.evaluate(() => { const k = []; for (;;) { const c = document.createElement('canvas'); c.width = c.height = 2000; c.getContext('2d').fillRect(0, 0, 2000, 2000); k.push(c) } })`,
  'renderer busy loop': 'await page.evaluate(() => { for (;;) {} })',
  'call flood (1 MB arguments)':
    "const big = 'x'.repeat(1 << 20); const p = []; for (let i = 0; i < 300; i++) p.push(page.evaluate((s) => s.length, big).catch(() => 0)); await Promise.all(p)",
  'slow selectors':
    "const p = []; for (let i = 0; i < 45; i++) p.push(page.$('a,'.repeat(120)).catch(() => 0)); await Promise.all(p)",
  'log flood': "for (let i = 0; i < 1e6; i++) console.log('x'.repeat(100), i)",
  'page console flood': PAGE_CONSOLE_FLOOD,
  'isolate memory bomb': 'const a = []; for (;;) a.push(new Array(1e5).fill(Math.random()))',
};

/**
 * Attacks sent two at once, after the innocent key has been idle for
 * IDLE_BEFORE_TAKING_MS: they take both slots, and the innocent key's next
 * request comes while they run (issue 45: a key sending two console floods
 * while the honest key is idle).
 */
export const PAIRS: Readonly<Record<string, string>> = {
  'console-flood pair (two page console floods, sent while the innocent key is idle)': PAGE_CONSOLE_FLOOD,
};

/**
 * The innocent key's pace: the attacker may hold it before its next request
 * (its last one answered), to send a pair while it is idle, and then let it go.
 */
export class InnocentPace {
  #held: { released: Promise<void>; release: () => void; arrived: (waiting: boolean) => void } | undefined;
  #done = false;

  /** Called before each innocent request: waits while held; true when it did. */
  async before(): Promise<boolean> {
    const held = this.#held;
    if (held === undefined) return false;
    held.arrived(true);
    await held.released;
    return true;
  }

  /** Holds the innocent key before its next request; true once it waits there, false if it has sent its last. */
  hold(): Promise<boolean> {
    if (this.#done) return Promise.resolve(false);
    let release = (): void => undefined;
    let arrived = (_waiting: boolean): void => undefined;
    const released = new Promise<void>((r) => (release = r));
    const there = new Promise<boolean>((r) => (arrived = r));
    this.#held = { released, release, arrived };
    return there;
  }

  /** The innocent key has sent its last request: a hold waits for nothing. */
  end(): void {
    this.#done = true;
    this.#held?.arrived(false);
  }

  release(): void {
    this.#held?.release();
    this.#held = undefined;
  }
}

/** The innocent key's first request after it was held: its whole time and its wait for a slot (ms). */
interface AfterHold {
  during: string;
  ms: number;
  queueMs: number;
}

/** INNOCENT_N requests, and more while `more()` says so (beside the attacker: until its whole parade has run). */
async function innocentLoop(
  deps: NeighbourDeps,
  base: string,
  more: () => boolean = () => false,
  during: () => string = () => 'solo',
  by: Record<string, number[]> = {},
  pace?: InnocentPace,
): Promise<{
  ms: number[];
  failures: string[];
  by: Record<string, number[]>;
  slowest: Slow[];
  afterHold: AfterHold[];
}> {
  const ms: number[] = [];
  const failures: string[] = [];
  const slowest: Slow[] = [];
  const afterHold: AfterHold[] = [];
  try {
    for (let i = 0; i < INNOCENT_N || more(); i++) {
      const held = (await pace?.before()) ?? false;
      const attack = during();
      const r = await deps.call(base, { url: deps.pageUrl, script: INNOCENT_SCRIPT }, INNOCENT_KEY);
      ms.push(r.ms);
      if (held) afterHold.push({ during: attack, ms: Math.round(r.ms), queueMs: Math.round(r.timing?.queue ?? NaN) });
      (by[attack] ??= []).push(r.ms);
      slowest.push({ ms: Math.round(r.ms), during: attack, timing: r.timing ?? {} });
      slowest.sort((a, b) => b.ms - a.ms).splice(SLOWEST_KEPT);
      if (r.status !== 200) failures.push(r.error ?? String(r.status));
      await new Promise((res) => setTimeout(res, INNOCENT_PAUSE_MS));
    }
  } finally {
    // The attacker may be waiting to hold the innocent key: it has sent its last request.
    pace?.end();
  }
  return { ms, failures, by, slowest, afterHold };
}

/** An innocent request among the slowest: which attack ran, and where its time went (its Server-Timing, ms). */
interface Slow {
  ms: number;
  during: string;
  timing: Record<string, number>;
}
/** How many of the slowest innocent requests the report shows. */
const SLOWEST_KEPT = 5;

export async function neighbour(deps: NeighbourDeps): Promise<Record<string, unknown>> {
  // The ceiling the run is held to: exactly what two slots are planned to need with the defaults.
  const serviceMemoryMb = memoryPlan({
    concurrency: CONCURRENCY,
    chromium: deps.mode,
    pageMemoryMb: 512,
    scriptMemoryMb: 128,
    maxResultBytes: 10 * 2 ** 20,
  }).plannedMb;
  const svc = await deps.startService({
    API_KEYS: `${INNOCENT_KEY},${ATTACKER_KEY}`,
    EGRESS_ALLOWLIST: `127.0.0.1:${deps.fixturePort}`,
    SERVICE_MEMORY_MB: String(serviceMemoryMb),
    MAX_CONCURRENCY: String(CONCURRENCY),
    SCRIPT_TIMEOUT_MS: '5000',
  });
  const root = svc.child.pid as number;
  const memory = TreeSampler.start(root, MEMORY_EVERY_MS);
  let worstHealthMs = 0;
  const loads: number[] = [];
  let stop = false;
  const prober = (async () => {
    while (!stop) {
      worstHealthMs = Math.max(worstHealthMs, await deps.health(svc.base));
      loads.push(loadavg()[0] ?? 0);
      await new Promise((r) => setTimeout(r, SAMPLE_EVERY_MS));
    }
  })();
  try {
    for (let i = 0; i < 5; i++) await deps.call(svc.base, { url: deps.pageUrl, script: INNOCENT_SCRIPT }, INNOCENT_KEY);
    const solo = await innocentLoop(deps, svc.base);
    const soloPeak = memory.peak;
    const soloHealth = worstHealthMs;
    worstHealthMs = 0;
    let attacking = true;
    // On a quiet machine INNOCENT_N innocent requests end before the parade does: the innocent key goes on until every attack has run.
    let paradesDone = 0;
    const outcomes: Record<string, Record<string, number>> = {};
    let current = 'between attacks';
    // The innocent requests started beside each attack so far (innocentLoop fills it).
    const during: Record<string, number[]> = {};
    const pace = new InnocentPace();
    const parade = [
      ...Object.entries(PARADE).map(([name, script]) => ({ name, script, copies: 1 })),
      ...Object.entries(PAIRS).map(([name, script]) => ({ name, script, copies: 2 })),
    ].filter((a) => deps.attacks?.test(a.name) ?? true);
    // No attack chosen (--attacks naming only the held-slots phase): the innocent key's INNOCENT_N requests, alone.
    if (parade.length === 0) paradesDone = deps.parades ?? 1;
    const attacker = (async () => {
      while (attacking && parade.length > 0) {
        for (const { name, script, copies } of parade) {
          const want = BESIDE_EACH * (paradesDone + 1);
          for (let run = 0; attacking && run < MAX_REPEATS && (during[name]?.length ?? 0) < want; run++) {
            current = name;
            const send = () => deps.call(svc.base, { url: deps.pageUrl, script }, ATTACKER_KEY);
            let replies;
            if (copies === 1) replies = [await send()];
            else {
              // Sent while the innocent key is idle, so that they take every slot before its next request.
              if (!(await pace.hold())) break;
              await sleep(IDLE_BEFORE_TAKING_MS);
              const sent = Array.from({ length: copies }, send);
              await sleep(HEAD_START_MS);
              pace.release();
              replies = await Promise.all(sent);
            }
            for (const r of replies) {
              const key = r.status === 200 ? '200' : ((r.error ?? String(r.status)).split(':')[0] ?? '?');
              (outcomes[name] ??= {})[key] = (outcomes[name]?.[key] ?? 0) + 1;
            }
            current = 'between attacks';
          }
        }
        paradesDone++;
      }
    })();
    const beside = await innocentLoop(
      deps,
      svc.base,
      () => paradesDone < (deps.parades ?? 1),
      () => current,
      during,
      pace,
    );
    attacking = false;
    await attacker;
    const held = (deps.attacks?.test(EVERY_SLOT_HELD) ?? true) ? await everySlotHeld(deps, svc.base) : undefined;
    const soloP95 = pct(solo.ms, 95);
    return {
      chromium: deps.mode,
      serviceMemoryMb,
      innocent: {
        soloP50Ms: Math.round(pct(solo.ms, 50)),
        soloP95Ms: Math.round(pct(solo.ms, 95)),
        attackedP50Ms: Math.round(pct(beside.ms, 50)),
        attackedP95Ms: Math.round(pct(beside.ms, 95)),
        p95Ratio: Math.round((pct(beside.ms, 95) / soloP95) * 100) / 100,
        failures: solo.failures.length + beside.failures.length,
        failureKinds: [...solo.failures, ...beside.failures],
      },
      worstHealthMs: { solo: Math.round(soloHealth), attacked: Math.round(worstHealthMs) },
      peakMemoryMb: { solo: soloPeak, whole: memory.peak, samples: memory.samples },
      loadAverage1m: { min: Math.min(...loads), max: Math.max(...loads) },
      attacker: outcomes,
      // Which attack was running when each innocent request started: where the innocent key's time went.
      innocentDuring: Object.fromEntries(
        Object.entries(beside.by).map(([name, xs]) => [
          name,
          {
            n: xs.length,
            p50Ms: Math.round(pct(xs, 50)),
            p95Ms: Math.round(pct(xs, 95)),
            p95Ratio: Math.round((pct(xs, 95) / soloP95) * 100) / 100,
            maxMs: Math.round(Math.max(...xs)),
          },
        ]),
      ),
      slowestInnocent: beside.slowest,
      // The innocent key's first request after each pair was sent while it was idle.
      innocentFirstAfterPair: beside.afterHold,
      ...(held === undefined ? {} : { everySlotHeld: held }),
    };
  } finally {
    stop = true;
    await prober;
    await memory.stop();
    await svc.stop();
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The name the held-slots phase goes by (--attacks filters it too). */
export const EVERY_SLOT_HELD = 'every slot held by another key';
/** How many times the attacker takes every slot. */
const HELD_ROUNDS = QUICK ? 1 : 3;
/** How long each of the attacker's requests keeps its slot busy (its page's CPU, by the wall clock: it ends on time). */
const HELD_MS = 3000;
const HELD_SCRIPT = `await page.evaluate((ms) => { const end = Date.now() + ms; while (Date.now() < end); }, ${HELD_MS})`;
/** Between the attacker's two running requests: the first ends this much before the second. */
const HELD_STAGGER_MS = 1000;

/** One round of the held-slots phase, ms; `sent` is when the innocent request was sent. */
export interface HeldRound {
  /** The innocent request's wait for a slot (its Server-Timing queue). */
  waitMs: number;
  /** From the innocent request's sending to the end of the attacker's first request running then. */
  firstRunningEndMs: number;
  /** From that end to the innocent request's admission: the slot's after-reply work. */
  admittedAfterFirstEndMs: number;
  /** What the attacker's requests running at the innocent one's admission had left then. */
  hostileRemainingMs: number[];
  /** How each of the attacker's requests ended. */
  hostileStatuses: number[];
}

/** A request's times on the bench's clock: sent, admitted (sent + its queue), answered. */
export interface Timed {
  sentAt: number;
  admittedAt: number;
  endAt: number;
}

/**
 * The innocent request's wait measured against the attacker's requests: the
 * first of those running when it was sent ends, then the innocent one is
 * admitted (issue 45 point 3: at most that wait); the attacker's requests
 * still running then had what remained of them left.
 */
export function heldRound(innocent: Timed, hostile: readonly Timed[]): Omit<HeldRound, 'hostileStatuses'> {
  const running = hostile.filter((h) => h.admittedAt <= innocent.sentAt && h.endAt > innocent.sentAt);
  const firstEnd = Math.min(...running.map((h) => h.endAt));
  return {
    waitMs: Math.round(innocent.admittedAt - innocent.sentAt),
    firstRunningEndMs: Math.round(firstEnd - innocent.sentAt),
    admittedAfterFirstEndMs: Math.round(innocent.admittedAt - firstEnd),
    hostileRemainingMs: hostile
      .filter((h) => h.admittedAt <= innocent.admittedAt && h.endAt > innocent.admittedAt)
      .map((h) => Math.round(h.endAt - innocent.admittedAt)),
  };
}

/**
 * The attacker takes every slot while the innocent key is idle: two requests of
 * HELD_MS, HELD_STAGGER_MS apart, and two more queued behind them (a queue
 * served in order would run those before the innocent key's request); then the
 * innocent key sends one.
 */
async function everySlotHeld(deps: NeighbourDeps, base: string): Promise<HeldRound[]> {
  const rounds: HeldRound[] = [];
  for (let round = 0; round < HELD_ROUNDS; round++) {
    await sleep(IDLE_BEFORE_TAKING_MS);
    const timed = async (key: string, script: string): Promise<Timed & { status: number }> => {
      const sentAt = performance.now();
      const r = await deps.call(base, { url: deps.pageUrl, script }, key);
      return { sentAt, admittedAt: sentAt + (r.timing?.queue ?? NaN), endAt: sentAt + r.ms, status: r.status };
    };
    const hostile = [timed(ATTACKER_KEY, HELD_SCRIPT)];
    await sleep(HELD_STAGGER_MS);
    hostile.push(timed(ATTACKER_KEY, HELD_SCRIPT));
    await sleep(HEAD_START_MS);
    hostile.push(timed(ATTACKER_KEY, HELD_SCRIPT), timed(ATTACKER_KEY, HELD_SCRIPT));
    await sleep(HEAD_START_MS);
    const innocent = await timed(INNOCENT_KEY, INNOCENT_SCRIPT);
    const done = await Promise.all(hostile);
    rounds.push({ ...heldRound(innocent, done), hostileStatuses: done.map((h) => h.status) });
  }
  return rounds;
}

/** The neighbour run's lines of their own: the held-slots wait and each pair's innocent p95 against its solo p95. */
export function neighbourLines(result: Record<string, unknown>): string[] {
  const lines: string[] = [];
  const innocent = result.innocent as { soloP95Ms: number };
  const during = result.innocentDuring as Record<string, { n: number; p95Ms: number; p95Ratio: number }>;
  for (const name of Object.keys(PAIRS)) {
    const d = during[name];
    if (d === undefined) continue;
    const first = (result.innocentFirstAfterPair as AfterHold[]).filter((a) => a.during === name);
    lines.push(
      `${name}: innocent p95 ${d.p95Ms} ms beside it (n=${d.n}) against ${innocent.soloP95Ms} ms solo: **${d.p95Ratio} ×**; ` +
        `its first request after each pair waited ${first.map((f) => f.queueMs).join(', ')} ms for a slot (took ${first.map((f) => f.ms).join(', ')} ms)`,
    );
  }
  const held = result.everySlotHeld as HeldRound[] | undefined;
  if (held !== undefined)
    lines.push(
      `${EVERY_SLOT_HELD} (two running, two queued, ${HELD_MS} ms each): the innocent request waited ` +
        held
          .map(
            (h) =>
              `**${h.waitMs} ms** (the attacker's first running request ended ${h.firstRunningEndMs} ms after it was sent; admitted ${h.admittedAfterFirstEndMs} ms after that end; the attacker's running requests had ${h.hostileRemainingMs.join(', ') || 'nothing'} ms left)`,
          )
          .join('; '),
    );
  return lines;
}
