// One request's V8 isolate: created with a hard memory cap, given the runtime
// (cheerio is loaded when the script needs it), runs one script under a
// wall-clock deadline, then disposed.
import ivm from 'isolated-vm';
import { ApiError, scrapingFailed } from '../../common/errors.js';
import { compileCached, loadBundle } from './bundle.js';
import { CheerioLoader } from './cheerio-loader.js';
import { HeapPeak } from './heap-peak.js';
import { NATIVE_TIMEOUT_MARGIN_MS, disposeIsolate } from './isolate-stop.js';
import { readOutcome } from './outcome.js';
import { compileFailure, isMemoryError, outcomeFailure, scriptTimedOut } from './script-errors.js';

export interface SandboxOptions {
  readonly memoryLimitMb: number;
  readonly maxResultBytes: number;
  readonly maxLogLines: number;
  readonly maxLogBytes: number;
  readonly defaultTimeoutMs: number;
  /**
   * Called if isolated-vm reports a fault that may have corrupted the process,
   * or if an isolate's thread goes on running after the isolate was disposed
   * (isolate-stop.ts): either way the process should end.
   */
  onCatastrophicError?(message: string): void;
}

export interface ScriptResult {
  /** The script's return value as JSON text; absent when it returned undefined. */
  readonly json?: string;
}

type HostHandler = (json: unknown) => string;

const SCRIPT_FILENAME = 'script.js';

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
  /** Settles once the disposed isolate's thread has stopped (isolate-stop.ts). */
  #stopped: Promise<void> = Promise.resolve();
  readonly #onDisposed: (() => void)[] = [];
  readonly #cheerio: CheerioLoader;
  readonly #maxResultBytes: number;
  readonly #memoryLimitMb: number;
  readonly #onCatastrophicError: (message: string) => void;
  readonly #heap: HeapPeak;

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
    this.#cheerio = new CheerioLoader(isolate, context);
    this.#heap = new HeapPeak(isolate);
  }

  /**
   * A fresh isolate with the runtime loaded; the script is not there yet, and
   * neither is cheerio (cheerio-loader.ts): loadCheerio() loads it ahead.
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
            if (self) self.#cheerio.onFirstUse();
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
    return this.#cheerio.ahead();
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
    await this.#cheerio.settled();
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
      throw compileFailure(e);
    }

    const aborted = new Promise<never>((_, reject) => {
      this.#abort = reject;
    });
    aborted.catch(() => undefined);
    const timer = setTimeout(() => this.abort(scriptTimedOut(timeoutMs)), timeoutMs);
    const stopSampling = this.#heap.watch();
    try {
      const outcome = readOutcome(
        await Promise.race([this.#start(compiled, timeoutMs + NATIVE_TIMEOUT_MARGIN_MS), aborted]),
        Math.min(maxResultBytes, this.#maxResultBytes),
      );
      if (outcome.ok) return outcome.json === undefined ? {} : { json: outcome.json };
      throw outcomeFailure(outcome);
    } catch (e) {
      if (this.#abortReason) throw this.#abortReason;
      if (e instanceof ApiError) throw e;
      // isolated-vm's own limit came first (our timer was late: a busy event loop).
      if (e instanceof Error && e.message.startsWith('Script execution timed out')) {
        const late = scriptTimedOut(timeoutMs);
        this.abort(late);
        throw late;
      }
      if (isMemoryError(e) || this.#isolate.isDisposed) {
        // isolated-vm ended it at its limit: that much it held, whatever the last reading said.
        this.#heap.atLeast(this.#memoryLimitMb * 2 ** 20);
        throw new ApiError('MEMORY_LIMIT_EXCEEDED', undefined, { cause: e });
      }
      throw scrapingFailed(e instanceof Error ? e.message : String(e), e);
    } finally {
      clearTimeout(timer);
      stopSampling();
    }
  }

  /** The isolate's peak heap in bytes (heap-peak.ts); never waits on a stuck isolate. */
  heapPeakBytes(): Promise<number> {
    return this.#heap.final();
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

  /** Disposes the isolate and checks that its thread stops (isolate-stop.ts). */
  #disposeIsolate(): void {
    if (!this.#isolate.isDisposed)
      this.#stopped = disposeIsolate(this.#isolate, this.#context, this.#onCatastrophicError);
  }

  /**
   * Settles once the isolate, disposed, has stopped running: at once for
   * JavaScript; never for a thread stuck in native code (the process ends).
   */
  stopped(): Promise<void> {
    return this.#stopped;
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
