// The process tree's memory, sampled on a worker thread. Reading
// /proc/<pid>/smaps_rollup makes the kernel walk the process's page tables:
// for a slot whose page or isolate holds hundreds of MB, one sample of the tree
// took up to 790 ms. Done on the bench's own event loop, that stalled the load
// driver, the fixture server and the /health probe, and the stall was counted
// as the service's latency; on a thread of its own it stalls nothing we time.
import { Worker } from 'node:worker_threads';

export interface TreeSample {
  readonly residentMb: number;
  readonly pssMb: number;
}

export class TreeSampler {
  readonly #worker: Worker;
  #peak: TreeSample = { residentMb: 0, pssMb: 0 };
  #samples = 0;

  private constructor(worker: Worker, onSample: ((s: TreeSample) => void) | undefined) {
    this.#worker = worker;
    worker.on('message', (m: TreeSample) => {
      this.#samples++;
      onSample?.(m);
      this.#peak = {
        residentMb: Math.max(this.#peak.residentMb, m.residentMb),
        pssMb: Math.max(this.#peak.pssMb, m.pssMb),
      };
    });
  }

  /** Samples the tree of `root` every `everyMs` (ms) until stop(); `onSample` sees each sample. */
  static start(root: number, everyMs: number, onSample?: (s: TreeSample) => void): TreeSampler {
    return new TreeSampler(
      new Worker(new URL('./tree-sampler-worker.ts', import.meta.url), { workerData: { root, everyMs } }),
      onSample,
    );
  }

  /** The largest figures since the start or the last reset(). */
  get peak(): TreeSample {
    return this.#peak;
  }

  /** How many samples arrived. */
  get samples(): number {
    return this.#samples;
  }

  reset(): void {
    this.#peak = { residentMb: 0, pssMb: 0 };
  }

  async stop(): Promise<void> {
    await this.#worker.terminate();
  }
}
