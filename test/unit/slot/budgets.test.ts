// The host-side budgets of one request (src/slot/membrane/budgets.ts), driven through
// the membrane with a stand-in page and a stand-in isolate, so that each limit
// is reached deterministically.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Page } from 'puppeteer';
import { parsePSelectors } from '../../../node_modules/puppeteer-core/lib/esm/puppeteer/common/PSelectorParser.js';
import {
  MAX_ABANDONED_CALLS,
  MAX_CALLS_IN_FLIGHT,
  MAX_EXPOSED_FUNCTIONS,
  MAX_QUEUED_CHARS,
  MAX_PRELOAD_CHARS,
  MAX_PRELOAD_SCRIPTS,
  MAX_SELECTOR_CHARS,
  MAX_TRANSFER_CHARS,
  MAX_PAGE_FUNCTION_CHARS,
  MAX_HANDLE_CHARS,
  MAX_WAITING_EVENTS,
  MAX_WAITING_EXPOSED_CALLS,
  checkSelectorCost,
} from '../../../src/slot/membrane/budgets.js';
import { Membrane } from '../../../src/slot/membrane/membrane.js';
import { MAX_ERROR_MESSAGE_CHARS, readOutcome } from '../../../src/slot/membrane/outcome.js';

interface Sent {
  json: string;
  msg: { op: string; id?: number; ok?: boolean; v?: unknown; e?: { message: string } };
}

/** A membrane over a page whose methods the test gives; messages to the isolate are recorded and never taken. */
function membrane(
  page: Record<string, unknown>,
  opts: {
    expired?: () => boolean;
    maxHostCpuMs?: number;
    maxHandles?: number;
    now?: () => number;
  } = {},
): { m: Membrane; sent: Sent[]; call: (m: string, a?: unknown[]) => string } {
  const sent: Sent[] = [];
  let id = 0;
  const { expired, now, ...limits } = opts;
  const m = new Membrane({
    page: { on: () => undefined, off: () => undefined, ...page } as unknown as Page,
    clock: { remainingMs: () => 10_000 },
    limits: { maxHandles: 100, maxTimers: 10, maxLogLines: 10, maxLogBytes: 1000, ...limits },
    checkUrl: async () => undefined,
    ...(expired ? { expired } : {}),
    ...(now ? { now } : {}),
    // A busy isolate: nothing it is given is ever taken.
    toIsolate: (json) => {
      sent.push({ json, msg: JSON.parse(json) as Sent['msg'] });
      return new Promise(() => undefined);
    },
  });
  return { m, sent, call: (method, a = []) => m.onHost(JSON.stringify({ op: 'call', id: ++id, h: 1, m: method, a })) };
}

const settled = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('calls in flight', () => {
  test(`the call after ${MAX_CALLS_IN_FLIGHT} unsettled ones is refused at once with a named error`, () => {
    const { call } = membrane({ title: () => new Promise(() => undefined) });
    for (let i = 0; i < MAX_CALLS_IN_FLIGHT; i++) assert.equal(call('title'), '');
    const refused = JSON.parse(call('title')) as { ok: boolean; e: { name: string; message: string } };
    assert.equal(refused.ok, false);
    assert.equal(refused.e.name, 'RangeError');
    assert.match(refused.e.message, /too many calls in flight \(at most 100\)/);
  });

  test('a settled call frees its place', async () => {
    let finish: (v: string) => void = () => undefined;
    const { call } = membrane({ title: () => new Promise<string>((r) => (finish = r)) });
    for (let i = 0; i < MAX_CALLS_IN_FLIGHT; i++) call('title');
    await settled(); // the calls have started
    assert.notEqual(call('title'), '');
    finish('done');
    await settled();
    assert.equal(call('title'), '');
  });
});

describe('calls the script stopped waiting for', () => {
  // Measured before the fix: 60 evaluate calls of 12 MiB each, each aborted at once, took the
  // slot process from 116 MB to 1.5 GB (1.3 GB still held after the request ended) and made the
  // next request's navigation time out: the abort gave the budget back while the host still
  // held and sent the arguments.
  test("an aborted call that still runs on the host keeps its arguments' characters in flight", () => {
    const { call, m } = membrane({ evaluate: () => new Promise(() => undefined) });
    const big = 'x'.repeat(12 * 1024 * 1024);
    for (let id = 1; id <= 2; id++) {
      assert.equal(call('evaluate', ['(s) => 0', big]), '');
      m.onHost(JSON.stringify({ op: 'cancel', id }));
    }
    const refused = JSON.parse(call('evaluate', ['(s) => 0', big])) as { ok: boolean; e: { message: string } };
    assert.equal(refused.ok, false);
    assert.match(refused.e.message, /the arguments of the calls in flight are too large together/);
  });

  test('an aborted call gives its characters back once it settles on the host', async () => {
    const finish: (() => void)[] = [];
    const { call, m } = membrane({ evaluate: () => new Promise<void>((r) => finish.push(r)) });
    const big = 'x'.repeat(12 * 1024 * 1024);
    for (let id = 1; id <= 2; id++) {
      call('evaluate', ['(s) => 0', big]);
      m.onHost(JSON.stringify({ op: 'cancel', id }));
    }
    await settled(); // the calls have started
    for (const f of finish) f();
    await settled();
    assert.equal(call('evaluate', ['(s) => 0', big]), '');
  });

  test(`at most ${MAX_ABANDONED_CALLS} aborted calls may still run on the host; the next call is refused`, () => {
    const { call, m } = membrane({ title: () => new Promise(() => undefined) });
    for (let id = 1; id <= MAX_ABANDONED_CALLS; id++) {
      assert.equal(call('title'), '', `call ${id}`);
      m.onHost(JSON.stringify({ op: 'cancel', id }));
    }
    const refused = JSON.parse(call('title')) as { ok: boolean; e: { name: string; message: string } };
    assert.equal(refused.ok, false);
    assert.equal(refused.e.name, 'RangeError');
    assert.match(refused.e.message, /too many aborted calls are still running on the host \(at most 1000\)/);
  });
});

describe('data crossing the membrane', () => {
  test('one message from the isolate over the limit is refused before it is parsed', () => {
    const { m } = membrane({});
    const r = JSON.parse(m.onHost('x'.repeat(16 * 1024 * 1024 + 1))) as { e: { message: string } };
    assert.match(r.e.message, /arguments are too large to give to the host/);
  });

  test('one result over MAX_TRANSFER_CHARS reaches the script as an error, not as data', async () => {
    const { call, sent } = membrane({ title: async () => 'x'.repeat(MAX_TRANSFER_CHARS) });
    call('title');
    await settled();
    assert.equal(sent.length, 1);
    assert.equal(sent[0]?.msg.ok, false);
    assert.match(String(sent[0]?.msg.e?.message), /the result is too large to give to the script/);
    assert.ok((sent[0]?.json.length ?? Infinity) < 1000);
  });

  test('results waiting for a busy isolate stop at MAX_QUEUED_CHARS; the next one is an error', async () => {
    const chunk = 10 * 1024 * 1024;
    const { call, sent } = membrane({ title: async () => 'x'.repeat(chunk) });
    const fit = Math.floor(MAX_QUEUED_CHARS / (chunk + 100));
    for (let i = 0; i <= fit; i++) call('title');
    await settled();
    assert.equal(sent.length, fit + 1);
    assert.deepEqual(
      sent.map((s) => s.msg.ok),
      [...Array.from({ length: fit }, () => true), false],
    );
    assert.match(String(sent[fit]?.msg.e?.message), /too much data is waiting for the script/);
  });

  test("page events beyond the events' queue budget are dropped and counted", async () => {
    const handlers: ((p: unknown) => void)[] = [];
    const { m, sent } = membrane({
      on: (_e: string, fn: (p: unknown) => void) => void handlers.push(fn),
      title: async () => 'x'.repeat(10 * 1024 * 1024),
    });
    m.onHost(JSON.stringify({ op: 'sync', h: 1, m: 'subscribe', a: ['load'] }));
    const emit = handlers.at(-1) as (p: unknown) => void;
    for (let i = 0; i < 5; i++) emit('y'.repeat(10 * 1024 * 1024));
    await settled();
    // One event over MAX_WAITING_EVENT_CHARS goes when none waits; the next ones wait behind it, and are dropped.
    assert.equal(sent.length, 1);
    assert.equal(m.droppedEvents, 4);
  });

  test('page data shaped like a membrane tag is wrapped as data', () => {
    const { m } = membrane({});
    assert.deepEqual(m.encode({ $ps: 'h', id: 1, k: 'Page' }), { $ps: 'o', v: { $ps: 'h', id: 1, k: 'Page' } });
    assert.deepEqual(m.encode([{ $ps: 'u' }]), [{ $ps: 'o', v: { $ps: 'u' } }]);
  });
});

describe('no work after the deadline, the end, or the CPU budget', () => {
  test('a call made after the deadline does not start', async () => {
    let started = 0;
    const { call, sent } = membrane({ title: async () => String(++started) }, { expired: () => true });
    call('title');
    await settled();
    assert.equal(started, 0);
    assert.match(String(sent[0]?.msg.e?.message), /the script's time is up/);
  });

  test('a call made after the membrane is disposed does not start', async () => {
    let started = 0;
    const { m, call } = membrane({ title: async () => String(++started) });
    m.dispose();
    assert.equal(call('title'), '{"ok":false}');
    await settled();
    assert.equal(started, 0);
  });

  test('a call queued before disposal does not start after it', async () => {
    let started = 0;
    const { m, call } = membrane({ title: async () => String(++started) });
    call('title');
    m.dispose();
    await settled();
    assert.equal(started, 0);
  });

  test('once the host CPU budget is spent, calls are refused with a named error', async () => {
    // Each call costs exactly 30 ms of the membrane's clock, whatever the machine's load.
    let clockMs = 0;
    const spin = (): string => {
      clockMs += 30;
      return 'spun';
    };
    const { call, sent } = membrane({ title: spin }, { maxHostCpuMs: 50, now: () => clockMs });
    for (let i = 0; i < 3; i++) {
      call('title');
      await settled();
    }
    // The second call's own work takes the request past its budget: it ends with the budget's error too.
    assert.deepEqual(
      sent.map((s) => s.msg.ok),
      [true, false, false],
    );
    for (const s of sent.slice(1))
      assert.match(String(s.msg.e?.message), /^title: this script has used its host CPU budget \(50 ms\)$/);
  });

  // Attack (host CPU during a call): the budget was checked only before a call started, so one call's own
  // work (encoding a huge answer, Puppeteer's work in it) could run on far past it.
  test('the calls in flight when the host CPU budget runs out end at once with its error', async () => {
    let clockMs = 0;
    const { call, sent } = membrane(
      {
        // A wait that never ends on its own, and a call whose answer costs 80 ms to encode.
        waitForNavigation: () => new Promise(() => undefined),
        title: async () => ({
          get text(): string {
            clockMs += 80;
            return 'costly';
          },
        }),
      },
      { maxHostCpuMs: 50, now: () => clockMs },
    );
    call('waitForNavigation');
    call('title');
    await settled();
    assert.equal(sent.length, 2);
    for (const s of sent) {
      assert.equal(s.msg.ok, false);
      assert.match(String(s.msg.e?.message), /this script has used its host CPU budget \(50 ms\)/);
    }
    call('title');
    await settled();
    assert.equal(sent.length, 3);
    assert.equal(sent[2]?.msg.ok, false);
  });
});

describe('selectors Puppeteer parses slowly on the host are refused before parsing', () => {
  const refused: [string, string, RegExp][] = [
    ['10 kB of "[a="', '[a='.repeat(3400), /too long/],
    ['1 kB of "[a="', '[a='.repeat(340), /too many parts/],
    ['5,000 commas', 'a,'.repeat(900), /too many parts/],
    ['"(" nested 17 deep', ':is('.repeat(17) + 'a' + ')'.repeat(17), /nested too deeply/],
    ['1,000 escapes', '\\a'.repeat(1000), /too many parts/],
    ['1,000 unmatched ")"', ')a'.repeat(1000), /too many parts/],
  ];
  for (const [name, selector, message] of refused) {
    test(name, () => {
      assert.throws(() => checkSelectorCost(selector, 'page.$'), message);
    });
  }

  test(`ordinary selectors up to ${MAX_SELECTOR_CHARS} characters pass and parse`, () => {
    for (const s of [
      'div.a > p:nth-child(2n+1) ~ span[data-x="a,b]"]',
      'a >>> ::-p-text(Hello, world) >>>> ::-p-aria([name="x"][role="button"])',
      '#x .y, #z :is(.a, .b)',
    ]) {
      checkSelectorCost(s, 'page.$');
      parsePSelectors(s);
    }
  });
});

describe('the outcome the isolate reports is checked on the host', () => {
  test('a result over MAX_RESULT_BYTES in UTF-8 is RESULT_TOO_LARGE even when the isolate says ok', () => {
    const json = JSON.stringify('é'.repeat(600));
    const o = readOutcome(JSON.stringify({ ok: true, json }), 1024);
    assert.equal(o.ok ? 'ok' : o.code, 'RESULT_TOO_LARGE');
  });

  test('an outcome text far over the limit is refused before it is parsed', () => {
    const o = readOutcome('{"ok":true,"json":"' + 'x'.repeat(200_000), 1024);
    assert.equal(o.ok ? 'ok' : o.code, 'RESULT_TOO_LARGE');
  });

  test('an error message is cut and a made-up error name becomes Error', () => {
    const o = readOutcome(
      JSON.stringify({ ok: false, error: { name: 'Bad Name<script>', message: 'm'.repeat(50_000) } }),
      1024,
    );
    assert.ok(!o.ok);
    assert.equal(o.error.name, 'Error');
    assert.ok(o.error.message.length < MAX_ERROR_MESSAGE_CHARS + 50);
    assert.match(o.error.message, /… \(48000 more characters\)$/);
  });

  test('an outcome of the wrong kind is unreadable', () => {
    for (const raw of [42, '[]', '{"ok":true,"json":5}', 'not json']) {
      const o = readOutcome(raw, 1024);
      assert.equal(o.ok ? 'ok' : o.code, 'UNREADABLE', String(raw));
    }
  });
});

describe('preload scripts (page.evaluateOnNewDocument)', () => {
  /**
   * A page as Puppeteer's FrameManager is: the script is kept once the main frame
   * has it (identifier given), then sent to each frame of another site; `failAfterKeep`:
   * one of those frames detached meanwhile, so the call rejects with the script kept.
   */
  function preloadPage(failAfterKeep: () => boolean) {
    const kept = new Map<string, string>();
    let next = 1;
    const page = {
      evaluateOnNewDocument: (src: unknown, ...args: unknown[]) => {
        if (typeof src === 'string' && args.length > 0)
          return Promise.reject(new Error('Cannot evaluate a string with arguments'));
        const identifier = String(next++);
        kept.set(identifier, String(src));
        return failAfterKeep()
          ? Promise.reject(new Error('Protocol error (Page.addScriptToEvaluateOnNewDocument): Target closed'))
          : Promise.resolve({ identifier });
      },
      removeScriptToEvaluateOnNewDocument: (identifier: string) => {
        if (!kept.delete(identifier)) return Promise.reject(new Error(`Script ${identifier} not found`));
        return Promise.resolve();
      },
    };
    return { page, kept };
  }

  // Attack (host memory past the preload budget): the page removes a frame of another site while
  // Puppeteer sends it the new script. The call fails, and its budget was given back, but Puppeteer
  // had kept the script already: call after failing call, the slot process kept them all (100 here;
  // any number of 16 Mi characters each, for the price of a frame removed in a loop).
  test('a call that fails after Puppeteer kept its script keeps its budget: no more are kept than the budget allows', async () => {
    const { page, kept } = preloadPage(() => true);
    const { call, sent } = membrane(page);
    for (let i = 0; i < 100; i++) {
      call('evaluateOnNewDocument', [`window.p${i} = ${i}`]);
      await settled();
    }
    assert.ok(kept.size <= MAX_PRELOAD_SCRIPTS, `Puppeteer keeps ${kept.size} scripts`);
    const refused = sent.filter((s) => s.msg.ok === false && /at most 64 scripts/.test(s.msg.e?.message ?? ''));
    assert.equal(refused.length, 100 - MAX_PRELOAD_SCRIPTS);
  });

  // Attack (the slot process's thread, per frame): Puppeteer writes every preload script, as JSON, to each frame
  // of another site the page attaches. 16 Mi control characters (each \\u0001 in JSON) were within the budget
  // counted as kept, and each frame then cost 96 Mi characters of JSON.stringify on the slot process's one thread.
  test('preload scripts are counted as written to a frame (JSON): control characters count six each', async () => {
    const { page, kept } = preloadPage(() => false);
    const { call } = membrane(page);
    const text = `/*${'\u0001'.repeat(2 * 2 ** 20)}*/`;
    for (let i = 0; i < 8; i++) {
      call('evaluateOnNewDocument', [text]);
      await settled();
    }
    const written = [...kept.values()].reduce((n, t) => n + JSON.stringify(t).length - 2, 0);
    assert.ok(written <= MAX_PRELOAD_CHARS, `${written} characters written to each frame`);
    assert.equal(kept.size, 1);
  });

  test('a call Puppeteer refuses before keeping anything (a string with arguments) costs no budget', async () => {
    const { page, kept } = preloadPage(() => false);
    const { call, sent } = membrane(page);
    for (let i = 0; i < 100; i++) {
      call('evaluateOnNewDocument', ['window.x = 1', 1]);
      await settled();
    }
    assert.equal(kept.size, 0);
    call('evaluateOnNewDocument', ['window.y = 1']);
    await settled();
    assert.equal(kept.size, 1);
    assert.equal(sent.at(-1)?.msg.ok, true, sent.at(-1)?.json);
  });

  test('removing a script gives its budget back', async () => {
    const { page, kept } = preloadPage(() => false);
    const { call, sent } = membrane(page);
    for (let i = 0; i < MAX_PRELOAD_SCRIPTS + 10; i++) {
      call('evaluateOnNewDocument', ['1']);
      await settled();
      const last = sent.at(-1)?.msg;
      if (last?.ok !== true) {
        call('removeScriptToEvaluateOnNewDocument', [String(i - MAX_PRELOAD_SCRIPTS + 1)]);
        await settled();
        call('evaluateOnNewDocument', ['1']);
        await settled();
        assert.equal(sent.at(-1)?.msg.ok, true, sent.at(-1)?.json);
      }
    }
    assert.equal(kept.size, MAX_PRELOAD_SCRIPTS);
  });
});

// Attack (host memory and the slot process's thread, per frame): page.setExtraHTTPHeaders, setUserAgent,
// emulate, emulateTimezone, emulateMediaFeatures and authenticate each took a string as long as one
// membrane message (16 Mi characters). Puppeteer keeps each on the host until the page closes (with a
// time zone Chromium refuses, too: it keeps the state before applying it) and writes it again, as JSON,
// to each frame of another site the page attaches (credentials: to each request that asks for them).
describe('strings Puppeteer keeps for the rest of the request', () => {
  const long = 'a'.repeat(1024 * 1024);
  const cases: [string, unknown[]][] = [
    ['setExtraHTTPHeaders', [{ 'x-a': long }]],
    ['setExtraHTTPHeaders', [{ [`x-${long}`]: 'v' }]],
    ['setExtraHTTPHeaders', [Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`x-${i}`, 'v']))]],
    ['setUserAgent', [long]],
    ['setUserAgent', [{ userAgent: long }]],
    ['emulate', [{ userAgent: long, viewport: { width: 800, height: 600 } }]],
    ['emulateTimezone', [long]],
    ['emulateMediaFeatures', [[{ name: 'prefers-color-scheme', value: long }]]],
    ['authenticate', [{ username: long, password: 'p' }]],
    ['authenticate', [{ username: 'u', password: long }]],
  ];
  for (const [i, [method, args]] of cases.entries()) {
    test(`${method} with a 1 Mi-character string is refused before Puppeteer keeps it (${i})`, async () => {
      let reached = false;
      const reach = (): Promise<void> => {
        reached = true;
        return Promise.resolve();
      };
      const { call, sent } = membrane({
        setExtraHTTPHeaders: reach,
        setUserAgent: reach,
        emulate: reach,
        emulateTimezone: reach,
        emulateMediaFeatures: reach,
        authenticate: reach,
      });
      call(method, args);
      await settled();
      assert.equal(reached, false, `${method} reached Puppeteer`);
      const reply = sent.at(-1)?.msg;
      assert.equal(reply?.ok, false);
      assert.match(reply?.e?.message ?? '', /too long|at most 32 headers/);
    });
  }

  test('strings of ordinary length still reach Puppeteer', async () => {
    const seen: string[] = [];
    const reach = (name: string) => (): Promise<void> => {
      seen.push(name);
      return Promise.resolve();
    };
    const { call } = membrane({
      setExtraHTTPHeaders: reach('headers'),
      setUserAgent: reach('ua'),
      emulateTimezone: reach('tz'),
      emulateMediaFeatures: reach('media'),
      authenticate: reach('auth'),
    });
    call('setExtraHTTPHeaders', [{ 'x-a': 'b'.repeat(8192) }]);
    call('setUserAgent', ['Mozilla/5.0 '.repeat(80)]);
    call('emulateTimezone', ['America/Argentina/ComodRivadavia']);
    call('emulateMediaFeatures', [[{ name: 'prefers-color-scheme', value: 'dark' }]]);
    call('authenticate', [{ username: 'u', password: 'p'.repeat(8192) }]);
    await settled();
    assert.deepEqual(seen, ['headers', 'ua', 'tz', 'media', 'auth']);
  });
});

// Attack (host memory past the exposed-function budget): Puppeteer keeps a binding (its name, function and
// preload script) before it installs it in each frame. A frame of another site that the page removes meanwhile
// fails the call with the binding kept, and the membrane gave the name back: 100 failing names, 100 bindings.
test('an exposeFunction that fails after Puppeteer kept its binding still counts against MAX_EXPOSED_FUNCTIONS', async () => {
  const bindings = new Set<string>();
  const { call, sent } = membrane({
    exposeFunction: (name: string) => {
      if (bindings.has(name)) return Promise.reject(new Error(`window['${name}'] already exists!`));
      bindings.add(name);
      return Promise.reject(new Error('Protocol error (Page.addScriptToEvaluateOnNewDocument): Target closed'));
    },
  });
  for (let i = 0; i < 100; i++) {
    call('exposeFunction', [`f${i}`, i + 1]);
    await settled();
  }
  assert.ok(bindings.size <= MAX_EXPOSED_FUNCTIONS, `Puppeteer keeps ${bindings.size} bindings`);
  assert.equal(sent.filter((s) => /at most 64 functions/.test(s.msg.e?.message ?? '')).length, 36);
});

/** A stand-in for Puppeteer's console message (the membrane knows it by its class name). */
class CdpConsoleMessage {
  readonly #text: string;
  constructor(text: string) {
    this.#text = text;
  }
  type(): string {
    return 'log';
  }
  text(): string {
    return this.#text;
  }
  location(): object {
    return {};
  }
  stackTrace(): object[] {
    return [];
  }
}

describe('a page flooding a busy script', () => {
  // Attack (host memory): each console event was encoded, its message registered in the handle table with its
  // text, and only then dropped for a full queue; the handle stayed until the request ended (2,000 x 256 KB
  // console lines beside a busy isolate grew the slot process by 500 MB and the reply was still 200).
  test('console events a busy isolate cannot take are dropped and counted, and keep no handle', async () => {
    const handlers: ((p: unknown) => void)[] = [];
    // Room for every message in the table by count: what bounds it is the queue into the isolate.
    const { m, sent } = membrane(
      { on: (_e: string, fn: (p: unknown) => void) => void handlers.push(fn) },
      { maxHandles: 10_000 },
    );
    m.onHost(JSON.stringify({ op: 'sync', h: 1, m: 'subscribe', a: ['console'] }));
    const emit = handlers.at(-1) as (p: unknown) => void;
    const line = 'z'.repeat(256 * 1024);
    // Three times what the queue holds, and fewer than MAX_WAITING_EVENTS: the characters bound it, not the count.
    const emitted = Math.ceil((3 * MAX_QUEUED_CHARS) / line.length);
    assert.ok(emitted < MAX_WAITING_EVENTS);
    for (let i = 0; i < emitted; i++) emit(new CdpConsoleMessage(line));
    await settled();
    const delivered = sent.filter((s) => s.msg.op === 'event').length;
    assert.ok(delivered > 0 && delivered <= MAX_QUEUED_CHARS / line.length, `${delivered} delivered`);
    assert.equal(m.droppedEvents, emitted - delivered);
    // Only the delivered ones hold a handle (and the page).
    assert.equal(m.handleCount, 1 + delivered);
    assert.ok(m.handleChars <= delivered * (line.length + 1024), `${m.handleChars} characters in handles`);
  });

  test(`the handle table holds at most ${MAX_HANDLE_CHARS} characters of page data, however many events the script takes`, async () => {
    const handlers: ((p: unknown) => void)[] = [];
    let taken = 0;
    const m = new Membrane({
      page: { on: (_e: string, fn: (p: unknown) => void) => void handlers.push(fn), off: () => undefined } as never,
      clock: { remainingMs: () => 10_000 },
      limits: { maxHandles: 10_000, maxTimers: 10, maxLogLines: 10, maxLogBytes: 1000 },
      checkUrl: async () => undefined,
      // An isolate that takes every message at once.
      toIsolate: async () => {
        taken++;
        return undefined;
      },
    });
    m.onHost(JSON.stringify({ op: 'sync', h: 1, m: 'subscribe', a: ['console'] }));
    const emit = handlers.at(-1) as (p: unknown) => void;
    const line = 'w'.repeat(1024 * 1024);
    for (let i = 0; i < 64; i++) {
      emit(new CdpConsoleMessage(line));
      await settled();
    }
    assert.ok(m.handleChars <= MAX_HANDLE_CHARS, `${m.handleChars} characters in handles`);
    assert.equal(taken, m.handleCount - 1);
    assert.ok(m.droppedEvents > 0 && m.droppedEvents + taken === 64);
  });

  test(`past ${MAX_WAITING_EVENTS} small events waiting for a busy isolate, the next ones are dropped before they are encoded`, async () => {
    const handlers: ((p: unknown) => void)[] = [];
    const { m, sent } = membrane({ on: (_e: string, fn: (p: unknown) => void) => void handlers.push(fn) });
    m.onHost(JSON.stringify({ op: 'sync', h: 1, m: 'subscribe', a: ['load'] }));
    const emit = handlers.at(-1) as (p: unknown) => void;
    let encoded = 0;
    const payload = {
      get n(): number {
        encoded++;
        return 1;
      },
    };
    for (let i = 0; i < MAX_WAITING_EVENTS + 500; i++) emit(payload);
    await settled();
    assert.equal(sent.length, MAX_WAITING_EVENTS);
    assert.equal(encoded, MAX_WAITING_EVENTS);
    assert.equal(m.droppedEvents, 500);
  });

  // Attack (host memory): an exposed function called 100,000 times by the page while the script is busy had
  // every call wait on the host for the isolate (+220 MB in 20 s).
  test(`an exposed function called by the page while the script is busy: past ${MAX_WAITING_EXPOSED_CALLS} waiting, calls fail at once and are counted`, async () => {
    let exposed: ((...a: unknown[]) => Promise<unknown>) | undefined;
    const { m, call, sent } = membrane({
      exposeFunction: (_name: string, fn: (...a: unknown[]) => Promise<unknown>) => {
        exposed = fn;
        return Promise.resolve();
      },
    });
    call('exposeFunction', ['hit', 1]);
    await settled();
    assert.ok(exposed);
    const hit = exposed;
    const calls = Array.from({ length: 5_000 }, (_, i) => hit(i));
    const outcomes = await Promise.race([
      Promise.allSettled(calls.slice(MAX_WAITING_EXPOSED_CALLS)),
      new Promise((r) => setImmediate(r, 'waiting')),
    ]);
    assert.notEqual(outcomes, 'waiting', 'the calls past the bound failed at once');
    for (const o of outcomes as PromiseSettledResult<unknown>[]) {
      assert.equal(o.status, 'rejected');
      assert.match(String((o as PromiseRejectedResult).reason), /too many calls are waiting for the script/);
    }
    assert.equal(sent.filter((s) => s.msg.op === 'exposed').length, MAX_WAITING_EXPOSED_CALLS);
    assert.equal(m.droppedExposedCalls, 5_000 - MAX_WAITING_EXPOSED_CALLS);
  });
});

describe('page functions', () => {
  test(`a page function over ${MAX_PAGE_FUNCTION_CHARS} characters is refused with a named error before Puppeteer sees it`, async () => {
    let reached = false;
    const { call, sent } = membrane({
      evaluate: () => {
        reached = true;
        return Promise.resolve(7);
      },
    });
    call('evaluate', [{ $ps: 'f', src: 'async'.repeat(240_000) + 'x(){return 7}' }]);
    call('evaluate', ['1;'.repeat(MAX_PAGE_FUNCTION_CHARS)]);
    await settled();
    assert.equal(reached, false);
    for (const s of sent) {
      assert.equal(s.msg.ok, false);
      assert.match(
        String(s.msg.e?.message),
        /^page\.evaluate: the page function is too long \(\d+ characters; at most 1048576\)$/,
      );
    }
  });

  // Attack (the slot process's one thread): Puppeteer's arrow test on 'async'.repeat(40000) + 'x(){…}' ran ~20 s.
  test('a 200k-character async source reaches Puppeteer as the text it would make, which its own tests pass at once', async () => {
    let given: unknown;
    const { call, sent } = membrane({
      evaluate: (fn: unknown) => {
        given = fn;
        return Promise.resolve(7);
      },
    });
    const src = 'async'.repeat(40_000) + 'x(){return 7}';
    call('evaluate', [{ $ps: 'f', src }]);
    await settled();
    assert.equal(sent[0]?.msg.ok, true);
    assert.equal(typeof given, 'function');
    assert.equal(String(given), `function ${src}`);
    assert.throws(() => (given as () => unknown)(), /a page function was called on the host/);
  });
});
