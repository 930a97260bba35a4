// The most an isolate's heap held while its script ran, read from V8 through
// isolated-vm on the host side (nothing the script says of itself): sampled
// while the script runs and read once more at its end (docs/keys-and-limits.md).
import type ivm from 'isolated-vm';
import { within } from '../../common/within.js';

/** How often a running script's isolate heap is read for its peak (one reading in flight at a time). */
export const HEAP_SAMPLE_MS = 100;
/** How long the reading at a script's end may take (an idle isolate answers in well under a millisecond). */
export const HEAP_FINAL_READ_MS = 50;

export class HeapPeak {
  readonly #isolate: ivm.Isolate;
  /** The most the isolate held at a reading (V8's used heap + what isolated-vm counts outside it), in bytes. */
  #peakBytes = 0;
  #sampling: Promise<void> | undefined;

  constructor(isolate: ivm.Isolate) {
    this.#isolate = isolate;
  }

  /** Samples every HEAP_SAMPLE_MS until the function returned is called. */
  watch(): () => void {
    // A reading never rejects (a disposed isolate is read as nothing).
    const sampler = setInterval(() => {
      this.#sample().catch(() => undefined);
    }, HEAP_SAMPLE_MS);
    sampler.unref();
    return () => clearInterval(sampler);
  }

  /** The isolate held at least this much (isolated-vm ended it at its limit), whatever the last reading said. */
  atLeast(bytes: number): void {
    this.#peakBytes = Math.max(this.#peakBytes, bytes);
  }

  /**
   * Keeps the highest reading. A reading waits for the isolate's thread; one at
   * a time, so a busy script does not pile them up.
   */
  #sample(): Promise<void> {
    if (this.#sampling || this.#isolate.isDisposed) return this.#sampling ?? Promise.resolve();
    this.#sampling = this.#isolate
      .getHeapStatistics()
      .then(
        (h) => this.atLeast(h.used_heap_size + h.externally_allocated_size),
        () => undefined, // disposed meanwhile
      )
      .finally(() => (this.#sampling = undefined));
    return this.#sampling;
  }

  /**
   * The peak in bytes, read once more now if the isolate is still there.
   * SECURITY: never waits on a stuck isolate: a disposed one may still run
   * native code and its reading would never come, so the last reading stands
   * then, and a final reading gets HEAP_FINAL_READ_MS.
   */
  async final(): Promise<number> {
    if (this.#isolate.isDisposed) return this.#peakBytes;
    await within(this.#sample(), HEAP_FINAL_READ_MS, () => undefined);
    return this.#peakBytes;
  }
}
