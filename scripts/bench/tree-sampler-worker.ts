// The worker thread of tree-sampler.ts: samples the tree's memory every
// everyMs and posts each sample.
import { parentPort, workerData } from 'node:worker_threads';
import { treeMemory } from './memory.js';

const { root, everyMs } = workerData as { root: number; everyMs: number };
for (;;) {
  parentPort?.postMessage(treeMemory(root));
  await new Promise((r) => setTimeout(r, everyMs));
}
