// Isolates prepared ahead of demand: each has the runtime loaded (cheerio is
// loaded per request when needed) and is handed to exactly one request, then
// disposed. Disposing one starts making its replacement in the background.
import type { Logger } from '../../common/log.js';
import { ScriptSandbox, type SandboxOptions } from './script-sandbox.js';

export class SandboxPool {
  readonly #opts: SandboxOptions;
  readonly #size: number;
  readonly #log: Logger;
  readonly #ready: ScriptSandbox[] = [];
  /** Isolates being made; close() waits for them, so none outlives the pool. */
  readonly #making = new Set<Promise<unknown>>();
  #closed = false;

  constructor(opts: SandboxOptions, size: number, logger: Logger) {
    this.#opts = opts;
    this.#size = size;
    this.#log = logger;
  }

  /** Starts filling the pool. */
  start(): void {
    this.#refill();
  }

  /** Once the isolates being made now are made (or failed). */
  async made(): Promise<void> {
    await Promise.allSettled(this.#making);
  }

  /**
   * A fresh, never-used isolate: a prepared one if there is one, else a new one.
   * With memoryLimitMb below the pool's (a key's SCRIPT_MEMORY_MB), always a new
   * one with that limit: isolated-vm sets an isolate's limit when it is made.
   */
  async take(memoryLimitMb?: number): Promise<ScriptSandbox> {
    const sandbox =
      memoryLimitMb !== undefined && memoryLimitMb < this.#opts.memoryLimitMb
        ? await ScriptSandbox.create({ ...this.#opts, memoryLimitMb })
        : (this.#ready.shift() ?? (await ScriptSandbox.create(this.#opts)));
    // Its replacement is made when it is disposed: between requests, not beside one.
    sandbox.onDisposed(() => this.#refill());
    return sandbox;
  }

  #refill(): void {
    while (!this.#closed && this.#ready.length + this.#making.size < this.#size) {
      const making: Promise<unknown> = ScriptSandbox.create(this.#opts)
        .then(
          (s) => {
            if (this.#closed) s.dispose();
            else this.#ready.push(s);
          },
          (e: unknown) => this.#log.error({ err: String(e) }, 'could not prepare an isolate'),
        )
        .finally(() => this.#making.delete(making));
      this.#making.add(making);
    }
  }

  /**
   * Disposes the prepared isolates and, once made, those being made. An isolate
   * left to the garbage collector at process exit can abort the process
   * (isolated-vm's IsolateEnvironment assertion), so none is left.
   */
  async close(): Promise<void> {
    this.#closed = true;
    for (const s of this.#ready.splice(0)) s.dispose();
    await Promise.all(this.#making);
  }
}
