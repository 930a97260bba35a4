// CPU of one walk of a slot's Chromium tree, the page memory watchdog's two
// ways (page-memory.ts): /proc's children files, or the Chromium group's
// member list. Against a live service's slot 0 (its pid given), as root.
//   node scripts/bootstrap.mjs run scripts/bench/tree-probe.ts <slot pid> [calls]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cgroupSource, procfsSource } from '../../src/slot/browser/page-memory.js';

const slot = Number(process.argv[2]);
const calls = Number(process.argv[3] ?? 300);
const memoryPath = /^\d+:memory:(.*)$/m.exec(readFileSync(`/proc/${slot}/cgroup`, 'utf8'))?.[1];
if (memoryPath === undefined) throw new Error('the slot has no memory cgroup');
const procs = join('/sys/fs/cgroup/memory', memoryPath, 'chromium', 'cgroup.procs');
const members = readFileSync(procs, 'utf8').split('\n').filter(Boolean).map(Number);
// The browser: the member whose parent is the slot process.
const browser = members.find(
  (p) => readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]?.split(' ')[1] === String(slot),
);
if (browser === undefined) throw new Error('no Chromium under the slot');
const threads = readdirSync(`/proc/${browser}/task`).length;
const measure = (name: string, tree: () => unknown[]): void => {
  tree();
  const t0 = process.cpuUsage();
  let n = 0;
  for (let i = 0; i < calls; i++) n += tree().length;
  const d = process.cpuUsage(t0);
  console.log(
    `${name}: ${((d.user + d.system) / calls / 1000).toFixed(3)} ms CPU a walk (user ${(d.user / calls / 1000).toFixed(3)}, system ${(d.system / calls / 1000).toFixed(3)}), ${n / calls} processes`,
  );
};
console.log(`browser ${browser}: ${members.length} processes in its group, ${threads} threads in the browser`);
for (let round = 0; round < 2; round++) {
  measure('procfs (children files)', () => procfsSource().tree(browser));
  measure('cgroup (member list)', () => cgroupSource(procs).tree(browser));
}
