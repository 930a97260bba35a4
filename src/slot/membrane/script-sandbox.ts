// One request's V8 isolate: created with a hard memory cap, given the runtime
// (cheerio is loaded when the script needs it), runs one script under a
// wall-clock deadline, then disposed.
import ivm from 'isolated-vm';
import { ApiError, scrapingFailed } from '../../common/errors.js';
import { compileCached, compileCachedSync, loadBundle } from './bundle.js';
import { readOutcome } from './outcome.js';

export interface SandboxOptions {
  readonly memoryLimitMb: number;
  readonly maxResultBytes: number;
  readonly maxLogLines: number;
  readonly maxLogBytes: number;
  readonly defaultTimeoutMs: number;
  /**
   * Called if isolated-vm reports a fault that may have corrupted the process,
   * or if an isolate's thread goes on running after the isolate was disposed
   * (see ISOLATE_STOP_GRACE_MS): either way the process should end.
   */
  onCatastrophicError?(message: string): void;
}

/**
 * isolated-vm's own time limit on the script's first turn (its synchronous part
 * and the microtasks it queues) is the script's deadline plus this: the
 * deadline's disposal comes first, and isolated-vm's limit is there for code
 * that disposal does not stop. When its limit passes and the code still runs
 * 5 s later, isolated-vm reports a catastrophic error ("Script failed to terminate").
 */
export const NATIVE_TIMEOUT_MARGIN_MS = 1_000;

/**
 * How long an isolate may take to stop after it is disposed. Disposing stops
 * JavaScript at its next interrupt check (milliseconds, measured), but some of
 * V8's builtins run in C++ without one: on a sparse array of length 2^32-1,
 * indexOf runs ~100 s and join ~200 s, and fill on a large one for ever, all
 * holding a core (and, for fill, gigabytes) that no deadline takes back. An
 * isolate still busy after this long is out of control: the process must end
 * (isolated-vm's README), and its supervisor starts another. Longer than
 * isolated-vm's own 5 s after NATIVE_TIMEOUT_MARGIN_MS, so that isolated-vm
 * reports the case it sees itself.
 */
export const ISOLATE_STOP_GRACE_MS = 10_000;

/** How often a running script's isolate heap is read for its peak (one reading in flight at a time). */
export const HEAP_SAMPLE_MS = 100;
/** How long the reading at a script's end may take (an idle isolate answers in well under a millisecond). */
export const HEAP_FINAL_READ_MS = 50;

export interface ScriptResult {
  /** The script's return value as JSON text; absent when it returned undefined. */
  readonly json?: string;
}

type HostHandler = (json: unknown) => string;

const SCRIPT_FILENAME = 'script.js';

function isMemoryError(e: unknown): boolean {
  return e instanceof Error && /memory limit|out of memory|heap/i.test(e.message);
}

/** "Unexpected identifier 'bar' [script.js:2:5]" → "SyntaxError: Unexpected identifier 'bar' (line 2, column 5)". */
function describeSyntaxError(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  const m = /^(.*?)\s*\[script\.js:(\d+):(\d+)\]$/.exec(msg);
  if (!m) return `SyntaxError: ${msg.replace(/\s*\[<isolated-vm>.*\]$/, '')}`;
  return `SyntaxError: ${m[1]} (line ${m[2]}, column ${m[3]})`;
}

/** Where a syntax error is, in the caller's coordinates (the compiler's [script.js:L:C]). */
function syntaxErrorPosition(e: unknown): { line: number; column: number } | undefined {
  const m = /\[script\.js:(\d+):(\d+)\]$/.exec(e instanceof Error ? e.message : String(e));
  return m ? { line: Number(m[1]), column: Number(m[2]) } : undefined;
}

export class ScriptSandbox {
  readonly #isolate: ivm.Isolate;
  readonly #context: ivm.Context;
  readonly #receive: ivm.Reference<(json: string) => unknown>;
  readonly #run: ivm.Reference<(fn: unknown) => Promise<string>>;
  readonly #stats: ivm.Reference<() => string>;
  #handler: HostHandler | undefined;
  #abortReason: ApiError | undefined;
  #abort: ((e: ApiError) => void) | undefined;
  #disposed = false;
  readonly #onDisposed: (() => void)[] = [];
  /** cheerio is in the isolate (loaded ahead by loadCheerio, or on first use). */
  #cheerioLoaded = false;
  #cheerioLoading: Promise<void> | undefined;
  readonly #maxResultBytes: number;
  readonly #memoryLimitMb: number;
  readonly #onCatastrophicError: (message: string) => void;
  /** The most the isolate held at a reading (V8's used heap + what isolated-vm counts outside it), in bytes. */
  #heapPeakBytes = 0;
  #sampling: Promise<void> | undefined;

  private constructor(
    isolate: ivm.Isolate,
    context: ivm.Context,
    refs: {
      receive: ivm.Reference<(json: string) => unknown>;
      run: ivm.Reference<(fn: unknown) => Promise<string>>;
      stats: ivm.Reference<() => string>;
    },
    maxResultBytes: number,
    memoryLimitMb: number,
    onCatastrophicError: (message: string) => void,
  ) {
    this.#isolate = isolate;
    this.#context = context;
    this.#receive = refs.receive;
    this.#run = refs.run;
    this.#stats = refs.stats;
    this.#maxResultBytes = maxResultBytes;
    this.#memoryLimitMb = memoryLimitMb;
    this.#onCatastrophicError = onCatastrophicError;
  }

  /**
   * A fresh isolate with the runtime loaded; the script is not there yet.
   * cheerio is not loaded: it is three quarters of an isolate's start (~10 of
   * ~13 ms of CPU, measured), and most scripts use only page. loadCheerio()
   * loads it ahead for a script that names it; otherwise the runtime's
   * `cheerio` getter loads it on first use (a script that reaches it by a name
   * built at run time).
   */
  static async create(opts: SandboxOptions): Promise<ScriptSandbox> {
    const bundle = loadBundle();
    const isolate = new ivm.Isolate({
      memoryLimit: opts.memoryLimitMb,
      onCatastrophicError: (message) => opts.onCatastrophicError?.(message),
    });
    try {
      const context = await isolate.createContext();
      let handler: ((json: unknown) => string) | undefined;
      let self: ScriptSandbox | undefined;
      // SECURITY: the isolate gets two functions, this one and __ps_cheerio below.
      // A Callback arrives there as a plain function of the isolate; its
      // arguments and result are copied strings.
      await context.global.set(
        '__ps_host',
        new ivm.Callback((json: unknown) => (handler ? handler(json) : '{"ok":false}'), { sync: true }),
      );
      await context.global.set(
        '__ps_settings',
        JSON.stringify({
          maxLogLines: opts.maxLogLines,
          maxLogBytes: opts.maxLogBytes,
          maxResultBytes: opts.maxResultBytes,
          defaultTimeoutMs: opts.defaultTimeoutMs,
        }),
      );
      // SECURITY: takes no argument and returns nothing; it runs our own bundle
      // (never text from the script) in this isolate, once.
      await context.global.set(
        '__ps_cheerio',
        new ivm.Callback(
          () => {
            if (self) self.#loadCheerioSync();
          },
          { sync: true },
        ),
      );
      const runtime = await compileCached(isolate, bundle.runtime);
      await runtime.run(context, { release: true });
      const [receive, run, stats] = await Promise.all([
        context.eval('__ps_runtime.receive', { reference: true }),
        context.eval('__ps_runtime.run', { reference: true }),
        context.eval('__ps_runtime.stats', { reference: true }),
      ]);
      await context.eval('delete globalThis.__ps_runtime');
      const made = new ScriptSandbox(
        isolate,
        context,
        { receive, run, stats },
        opts.maxResultBytes,
        opts.memoryLimitMb,
        (message) => opts.onCatastrophicError?.(message),
      );
      self = made;
      handler = (json) => (made.#handler ? made.#handler(json) : '{"ok":false}');
      return made;
    } catch (e) {
      if (!isolate.isDisposed) isolate.dispose();
      throw e;
    }
  }

  /**
   * Loads cheerio into the isolate ahead of the script, off Node's main thread
   * (the job calls it during the navigation for a script that names cheerio).
   * Failures are not thrown here: the script then meets them on first use.
   */
  loadCheerio(): Promise<void> {
    this.#cheerioLoading ??= (async () => {
      if (this.#cheerioLoaded || this.#isolate.isDisposed) return;
      const script = await compileCached(this.#isolate, loadBundle().cheerio);
      if (this.#cheerioLoaded) return script.release();
      this.#cheerioLoaded = true;
      await script.run(this.#context, { release: true });
    })().catch(() => undefined);
    return this.#cheerioLoading;
  }

  /** The runtime's `cheerio` getter, on first use, when loadCheerio was not called: runs inside the script's turn. */
  #loadCheerioSync(): void {
    if (this.#cheerioLoaded || this.#isolate.isDisposed) return;
    this.#cheerioLoaded = true;
    compileCachedSync(this.#isolate, loadBundle().cheerio).runSync(this.#context, { release: true });
  }

  /** Gives the isolate to one request: its membrane, and its targetUrl (a copied string). */
  async attach(handler: HostHandler, targetUrl: string): Promise<void> {
    this.#handler = handler;
    await this.#context.global.set('targetUrl', targetUrl, { copy: true });
  }

  /** Delivers a message (JSON text) to the runtime's receive(); with wantAnswer, awaits its promise. */
  async toIsolate(json: string, wantAnswer: boolean): Promise<string | undefined> {
    if (this.#isolate.isDisposed) throw new Error('the script has ended');
    if (!wantAnswer) {
      await this.#receive.apply(undefined, [json], { arguments: { copy: true } });
      return undefined;
    }
    const answer: unknown = await this.#receive.apply(undefined, [json], {
      arguments: { copy: true },
      result: { promise: true, copy: true },
    });
    return typeof answer === 'string' ? answer : undefined;
  }

  /**
   * Runs the script (the body of an async function) until it settles, the
   * deadline passes, or abort() is called. Disposes nothing: call dispose().
   * maxResultBytes: the request's own, when its key's is below the isolate's.
   */
  async execute(source: string, timeoutMs: number, maxResultBytes = this.#maxResultBytes): Promise<ScriptResult> {
    // A loadCheerio() still running finishes before the script, which could otherwise load it a second time.
    await this.#cheerioLoading;
    let compiled: ivm.Script;
    try {
      compiled = await this.#isolate.compileScript(`(async function () {\n${source}\n})`, {
        filename: SCRIPT_FILENAME,
        lineOffset: -1,
      });
    } catch (e) {
      // An abort while cheerio loaded or the script compiled (a crashed page, the
      // deadline, shutdown) disposed the isolate: its reason is the answer, not
      // the "Isolate is disposed" the compiler then reports.
      if (this.#abortReason) throw this.#abortReason;
      if (isMemoryError(e)) throw new ApiError('MEMORY_LIMIT_EXCEEDED');
      const failed = scrapingFailed(describeSyntaxError(e));
      const at = syntaxErrorPosition(e);
      if (at) failed.failure = at;
      throw failed;
    }

    const aborted = new Promise<never>((_, reject) => {
      this.#abort = reject;
    });
    aborted.catch(() => undefined);
    const timedOut = (): ApiError => {
      const e = scrapingFailed(`the script timed out after ${timeoutMs} ms`);
      e.timeout = 'script';
      return e;
    };
    const timer = setTimeout(() => this.abort(timedOut()), timeoutMs);
    // A reading never rejects (a disposed isolate is read as nothing).
    const sampler = setInterval(() => {
      this.#sampleHeap().catch(() => undefined);
    }, HEAP_SAMPLE_MS);
    sampler.unref();
    try {
      const outcome = readOutcome(
        await Promise.race([this.#start(compiled, timeoutMs + NATIVE_TIMEOUT_MARGIN_MS), aborted]),
        Math.min(maxResultBytes, this.#maxResultBytes),
      );
      if (outcome.ok) return outcome.json === undefined ? {} : { json: outcome.json };
      if (outcome.code === 'RESULT_TOO_LARGE')
        throw new ApiError('RESULT_TOO_LARGE', `Result too large: ${outcome.error.message}`);
      const { name, message, line, column, stack } = outcome.error;
      const where = line !== undefined ? ` (line ${line})` : '';
      const failed = scrapingFailed(`${name}: ${message}${where}`);
      // In the caller's coordinates: compiled with lineOffset -1 after a line of our own, so line 1 is theirs.
      failed.failure = {
        ...(line === undefined ? {} : { line }),
        ...(column === undefined ? {} : { column }),
        ...(stack === undefined ? {} : { stack: `${name}: ${message}\n${stack}` }),
      };
      throw failed;
    } catch (e) {
      if (this.#abortReason) throw this.#abortReason;
      if (e instanceof ApiError) throw e;
      // isolated-vm's own limit came first (our timer was late: a busy event loop).
      if (e instanceof Error && e.message.startsWith('Script execution timed out')) {
        const late = timedOut();
        this.abort(late);
        throw late;
      }
      if (isMemoryError(e) || this.#isolate.isDisposed) {
        // isolated-vm ended it at its limit: that much it held, whatever the last reading said.
        this.#heapPeakBytes = Math.max(this.#heapPeakBytes, this.#memoryLimitMb * 2 ** 20);
        throw new ApiError('MEMORY_LIMIT_EXCEEDED', undefined, { cause: e });
      }
      throw scrapingFailed(e instanceof Error ? e.message : String(e), e);
    } finally {
      clearTimeout(timer);
      clearInterval(sampler);
    }
  }

  /**
   * Reads the isolate's heap from V8 through isolated-vm (host side: nothing the
   * script says of itself), keeping the highest. A reading waits for the
   * isolate's thread; one at a time, so a busy script does not pile them up.
   */
  #sampleHeap(): Promise<void> {
    if (this.#sampling || this.#isolate.isDisposed) return this.#sampling ?? Promise.resolve();
    this.#sampling = this.#isolate
      .getHeapStatistics()
      .then(
        (h) => {
          this.#heapPeakBytes = Math.max(this.#heapPeakBytes, h.used_heap_size + h.externally_allocated_size);
        },
        () => undefined, // disposed meanwhile
      )
      .finally(() => (this.#sampling = undefined));
    return this.#sampling;
  }

  /**
   * The isolate's peak heap in bytes, read once more now if it is still there
   * (docs/keys-and-limits.md). SECURITY: never waits on a stuck isolate: a
   * disposed one may still run native code and its reading would never come, so
   * the last reading stands then, and a final reading gets HEAP_FINAL_READ_MS.
   */
  async heapPeakBytes(): Promise<number> {
    if (this.#isolate.isDisposed) return this.#heapPeakBytes;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.#sampleHeap(),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, HEAP_FINAL_READ_MS);
      }),
    ]);
    clearTimeout(timer);
    return this.#heapPeakBytes;
  }

  async #start(compiled: ivm.Script, nativeTimeoutMs: number): Promise<unknown> {
    const fn = (await compiled.run(this.#context, { reference: true, release: true })) as ivm.Reference<unknown>;
    try {
      if (fn.typeof !== 'function') throw scrapingFailed('the script must be the body of a function');
      return (await this.#run.apply(undefined, [fn.derefInto()], {
        result: { promise: true, copy: true },
        // SECURITY: a second limit, isolated-vm's, on the script's first turn (see NATIVE_TIMEOUT_MARGIN_MS).
        timeout: nativeTimeoutMs,
      })) as unknown;
    } finally {
      fn.release();
    }
  }

  /** Ends the script now with the given error (deadline, crashed page, shutdown). */
  abort(reason: ApiError): void {
    if (this.#abortReason) return;
    this.#abortReason = reason;
    this.#abort?.(reason);
    // SECURITY: disposing is the only thing that stops `while (true) {}`, a
    // microtask loop or an await that never settles.
    this.#disposeIsolate();
  }

  /**
   * Disposes the isolate and checks that its thread stops. A question is queued
   * to the isolate first: disposing settles it at once when the isolate is idle
   * or runs JavaScript; it stays unsettled only while the isolate's thread is
   * stuck in native code that no termination reaches.
   */
  #disposeIsolate(): void {
    if (this.#isolate.isDisposed) return;
    let probe: Promise<unknown> | undefined;
    try {
      probe = this.#context.eval('0');
    } catch {
      // the context is released: nothing of the script can be running
    }
    this.#isolate.dispose();
    if (!probe) return;
    const timer = setTimeout(
      () =>
        this.#onCatastrophicError(
          `an isolate went on running ${ISOLATE_STOP_GRACE_MS} ms after it was disposed (native code no termination reaches)`,
        ),
      ISOLATE_STOP_GRACE_MS,
    );
    // It must not keep a process alive that has nothing else to do.
    timer.unref();
    probe.then(
      () => clearTimeout(timer),
      () => clearTimeout(timer),
    );
  }

  /** Log lines the isolate dropped beyond the caps (exact when the script finished). */
  droppedLogs(): { lines: number; bytes: number } | undefined {
    if (this.#isolate.isDisposed) return undefined;
    try {
      const s = JSON.parse(this.#stats.applySync(undefined, [], { timeout: 50 }) as string) as {
        droppedLines: number;
        droppedBytes: number;
      };
      return { lines: s.droppedLines, bytes: s.droppedBytes };
    } catch {
      return undefined;
    }
  }

  /** Runs fn once this sandbox is disposed. */
  onDisposed(fn: () => void): void {
    this.#onDisposed.push(fn);
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#handler = undefined;
    this.#disposeIsolate();
    // Every isolated-vm handle is released now rather than left to Node's GC:
    // handles still waiting for GC when the process exits can abort it there.
    for (const handle of [this.#receive, this.#run, this.#stats, this.#context]) {
      try {
        handle.release();
      } catch {
        // already released, or the isolate is gone
      }
    }
    for (const fn of this.#onDisposed.splice(0)) fn();
  }
}
