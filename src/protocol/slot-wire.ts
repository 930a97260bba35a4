// The messages between the front and a slot process, over the
// front's wire (wire.ts: JSON lines on the socket pair given at its spawn), and
// the check the front makes of each message a slot process sends.
import type { Config } from '../common/config.js';
import { JOB_PHASES, type JobPhase } from '../common/errors.js';
import { isWireError, isWireResult } from './jobs.js';
import type { JobRequest, WireError, WireResult } from './jobs.js';
import { MAX_WIRE_LIST, hasOnly, isCount, isList, isObject, isSeconds } from './shape.js';
import type { SlotTestSeam, FaultKind } from './test-seams.js';

/** The configuration a slot process runs with: the front's, with every secret taken out. */
export type SlotConfig = Omit<Config, 'apiKeys' | 'apiKeysFile' | 'redisUrl' | 'metricsToken' | 'proxies'> & {
  readonly apiKeys: readonly never[];
  readonly apiKeysFile: undefined;
  readonly redisUrl: undefined;
  readonly metricsToken: undefined;
  readonly proxies: readonly never[];
};

/**
 * SECURITY: the slot process is given the configuration without keys, key file,
 * Redis URL, metrics token or proxies (their credentials go to the egress guard
 * alone, as EgressInit).
 */
export function slotConfig(config: Config): SlotConfig {
  return {
    ...config,
    apiKeys: [],
    apiKeysFile: undefined,
    redisUrl: undefined,
    metricsToken: undefined,
    proxies: [],
  };
}

/** What the slot process says about its Chromium, whenever it changes. */
export interface BrowserStatus {
  readonly ready: boolean;
  /** The slot's current Chromium. */
  readonly pid: number | undefined;
  /** Every Chromium of the slot: the current one and those retiring, which may still serve a request. */
  readonly pids: readonly number[];
  readonly restarts: number;
  readonly recycles: number;
  readonly contextsReady: number;
}

/** What a slot process holds now (read from /proc every second), in bytes. */
export interface SlotMemory extends SlotMemoryReport {
  /** The slot processes themselves: Node, the isolates. */
  readonly slotBytes: number;
  /** Every Chromium process of the slots. */
  readonly chromiumBytes: number;
}

/** What a slot says of its page memory: sent while a job runs and when it ends (the front reads the rest itself). */
export interface SlotMemoryReport {
  /** What the running requests' pages hold, as counted against PAGE_MEMORY_MB. */
  readonly pageBytes: number;
  /** Requests whose pages were ended for PAGE_MEMORY_MB (or whose renderer died of memory). */
  readonly pageLimitKills: number;
}

export type ToSlot =
  | {
      readonly type: 'init';
      readonly config: SlotConfig;
      /** The front's log level: the slot process sends only the lines the front would write. */
      readonly logLevel: string;
      /** The egress guard's browser-wide port (Chromium's --proxy-server), the same across its restarts. */
      readonly guardPort: number;
      /**
       * The cgroup.procs file of the memory group the slot puts its Chromium in,
       * where the kernel holds its page memory: its page memory is then read at
       * the lease and the end only. Absent: the watchdog polls.
       */
      readonly chromiumCgroup?: string;
      /**
       * Execute-only copies of Chromium and of the shell that puts it in its
       * cgroup, exec'd instead of the readable ones: its processes are then
       * non-dumpable (src/front/host/slot-privacy.ts).
       */
      readonly execOnly?: { readonly chromium: string; readonly shell: string };
      readonly seam?: SlotTestSeam;
    }
  | { readonly type: 'run'; readonly id: number; readonly request: JobRequest }
  /** The job's request was cancelled; `error` is the reason when it is a public error (shutdown). */
  | { readonly type: 'abort'; readonly id: number; readonly error?: WireError }
  /**
   * Tests (seam.faults): an exception nobody catches, a rejection nobody
   * handles, V8's heap exhausted, or `message` sent to the front as it is (what
   * a slot process that escaped our code could send).
   */
  | { readonly type: 'fault'; readonly kind: FaultKind; readonly message?: unknown }
  /** Close everything and exit 0. */
  | { readonly type: 'shutdown' };

export type FromSlot =
  | { readonly type: 'ready'; readonly chromiumSandbox: boolean }
  | { readonly type: 'status'; readonly browser: BrowserStatus }
  | { readonly type: 'memory'; readonly memory: SlotMemoryReport }
  /** One log line of the slot process's logger (pino JSON), for the front to write. */
  | { readonly type: 'log'; readonly line: string }
  | { readonly type: 'observe'; readonly metric: 'navigation' | 'script'; readonly seconds: number }
  | { readonly type: 'egress-refused' }
  | { readonly type: 'done'; readonly id: number; readonly outcome: WireResult }
  | { readonly type: 'failed'; readonly id: number; readonly error: WireError }
  /** The job got its context and isolate (navigation), or its script began (script): for a 500's log line. */
  | { readonly type: 'phase'; readonly id: number; readonly phase: JobPhase }
  /** The job's context and isolate are closed: its slot may be given to the next job. */
  | { readonly type: 'closed'; readonly id: number };

/**
 * The longest message (bytes of its JSON line) the front takes from a slot process (wire.ts). JSON escapes
 * a character in at most 6 bytes (a control character or a lone surrogate as \uXXXX): a page's HTML of
 * MAX_RESULT_BYTES and logs of MAX_LOG_BYTES characters, each at 6 bytes; a script's result is JSON text
 * already, at most 2 bytes a byte (`"` and `\` escaped again). 8 MiB for the rest (an error's Base64
 * screenshot of up to 1 MiB, its calls, the timings).
 */
export function maxSlotMessageBytes(maxResultBytes: number, maxLogBytes: number): number {
  return 6 * (maxResultBytes + maxLogBytes) + 8 * 2 ** 20;
}

/**
 * The most JSON tokens (wire.ts: `{ [ , :` outside strings, about one per value and key) a slot's message
 * holds. A slot's bulk is in strings; its structure is at most one list of MAX_WIRE_LIST items (its logs,
 * one token each) and its fields, a few hundred tokens (64 egress counts, the security tallies, 20 page
 * calls): 2^16 more is margin. SECURITY: at 3 bytes a token (`[],`) a line of maxSlotMessageBytes would
 * make tens of millions of values, gigabytes of the front's heap; this many make a few tens of MB.
 */
export const MAX_SLOT_MESSAGE_TOKENS = MAX_WIRE_LIST + 2 ** 16;

/**
 * The most the front may have sent a slot process that it has not read: a job's request (its script of at
 * most MAX_BODY_BYTES characters, at most 6 bytes each as JSON) and 16 MiB for the rest (its options, an abort).
 */
export function maxToSlotBytes(maxBodyBytes: number): number {
  return 6 * maxBodyBytes + 16 * 2 ** 20;
}

/** The longest log line the front takes from a slot process (its own lines are far shorter). */
export const MAX_SLOT_LOG_LINE = 64 * 1024;

function isBrowserStatus(b: unknown): boolean {
  return (
    isObject(b) &&
    typeof b.ready === 'boolean' &&
    (b.pid === undefined || isCount(b.pid)) &&
    isList(b.pids, isCount) &&
    isCount(b.restarts) &&
    isCount(b.recycles) &&
    isCount(b.contextsReady)
  );
}

/**
 * Each kind of message: the fields it has besides `type`, and whether they are of the types the front reads
 * them as. SECURITY: no other field. A field never read still costs the front its deserialization (a huge
 * array of empty objects: hundreds of MB, seconds): a child that sends one is killed, not left to send it again.
 */
const SHAPES: Record<FromSlot['type'], { fields: readonly string[]; is: (m: Record<string, unknown>) => boolean }> = {
  ready: { fields: ['chromiumSandbox'], is: (m) => typeof m.chromiumSandbox === 'boolean' },
  status: { fields: ['browser'], is: (m) => isBrowserStatus(m.browser) },
  memory: {
    fields: ['memory'],
    is: (m) =>
      isObject(m.memory) &&
      hasOnly(m.memory, ['pageBytes', 'pageLimitKills']) &&
      isSeconds(m.memory.pageBytes) &&
      isCount(m.memory.pageLimitKills),
  },
  log: { fields: ['line'], is: (m) => typeof m.line === 'string' && m.line.length <= MAX_SLOT_LOG_LINE },
  observe: {
    fields: ['metric', 'seconds'],
    is: (m) => (m.metric === 'navigation' || m.metric === 'script') && isSeconds(m.seconds),
  },
  'egress-refused': { fields: [], is: () => true },
  done: { fields: ['id', 'outcome'], is: (m) => isCount(m.id) && isWireResult(m.outcome) },
  failed: { fields: ['id', 'error'], is: (m) => isCount(m.id) && isWireError(m.error) },
  closed: { fields: ['id'], is: (m) => isCount(m.id) },
  phase: {
    fields: ['id', 'phase'],
    is: (m) => isCount(m.id) && (JOB_PHASES as readonly unknown[]).includes(m.phase),
  },
};

/**
 * SECURITY: what the front takes from a slot process. A slot process runs hostile
 * scripts and pages; one that escaped its isolate could send anything, and a
 * field of the wrong type read later in an event handler (a process exit's, a
 * health check's) would end the front. Throws on anything that is not a
 * FromSlot the front can read; the supervisor then kills the slot process.
 */
export function checkFromSlot(msg: unknown): FromSlot {
  if (!isObject(msg) || typeof msg.type !== 'string' || !Object.hasOwn(SHAPES, msg.type))
    throw new Error('a slot process sent a message of no known type');
  const type = msg.type as FromSlot['type'];
  const shape = SHAPES[type];
  if (!hasOnly(msg, ['type', ...shape.fields]))
    throw new Error(`a slot process sent a ${type} message with fields of its own`);
  if (!shape.is(msg)) throw new Error(`a slot process sent a ${type} message the front cannot read`);
  return msg as unknown as FromSlot;
}
