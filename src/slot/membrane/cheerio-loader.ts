// cheerio in a script's isolate, loaded only for a script that uses it: it is
// three quarters of an isolate's start (~10 of ~13 ms of CPU, measured), and
// most scripts use only page. Loaded ahead, off Node's main thread, for a
// script that names it; otherwise on first use, by the runtime's `cheerio`
// getter (a script that reaches it by a name built at run time).
import type ivm from 'isolated-vm';
import { compileCached, compileCachedSync, loadBundle } from './bundle.js';

export class CheerioLoader {
  readonly #isolate: ivm.Isolate;
  readonly #context: ivm.Context;
  #loaded = false;
  #loading: Promise<void> | undefined;

  constructor(isolate: ivm.Isolate, context: ivm.Context) {
    this.#isolate = isolate;
    this.#context = context;
  }

  /**
   * Loads cheerio ahead of the script. Failures are not thrown here: the script
   * then meets them on first use.
   */
  ahead(): Promise<void> {
    this.#loading ??= (async () => {
      if (this.#loaded || this.#isolate.isDisposed) return;
      const script = await compileCached(this.#isolate, loadBundle().cheerio);
      if (this.#loaded) return script.release();
      this.#loaded = true;
      await script.run(this.#context, { release: true });
    })().catch(() => undefined);
    return this.#loading;
  }

  /** A load ahead still running (the script waits for it, or would load cheerio a second time). */
  settled(): Promise<void> | undefined {
    return this.#loading;
  }

  /** The runtime's `cheerio` getter, on first use when it was not loaded ahead: runs inside the script's turn. */
  onFirstUse(): void {
    if (this.#loaded || this.#isolate.isDisposed) return;
    this.#loaded = true;
    compileCachedSync(this.#isolate, loadBundle().cheerio).runSync(this.#context, { release: true });
  }
}
