// The bench finds the service's processes by their entry files: its CPU
// columns split the tree into the slot processes, the egress process and
// Chromium, and a pattern that misses a process moves its CPU into another.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { egressPids, slotPids } from '../../../scripts/bench/proc.js';
import tsupConfig from '../../../tsup.config.js';

/** The service's entry names in tsup.config.ts: what dist/ holds and the front forks. */
function entries(): string[] {
  // defineConfig([...]) returns the array it is given.
  assert.ok(Array.isArray(tsupConfig), 'tsup.config.ts exports a list of builds');
  const service = (tsupConfig as { entry?: unknown }[])
    .map((c) => c.entry)
    .find((e): e is Record<string, string> => typeof e === 'object' && e !== null && 'server' in e);
  assert.ok(service, 'tsup.config.ts has the service entry');
  return Object.keys(service);
}

test('the bench tells the egress process and the slot processes apart by their built entry files', async (t) => {
  const names = entries();
  assert.deepEqual(names.sort(), ['egress-process', 'server', 'slot']);
  // A child whose command line names the built file, as the front's children's do.
  const child = (file: string) => {
    const c = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)', `/srv/pagescript/dist/${file}.js`], {
      stdio: 'ignore',
    });
    t.after(() => c.kill('SIGKILL'));
    return c;
  };
  const egress = child('egress-process');
  const slot = child('slot');
  await Promise.all([once(egress, 'spawn'), once(slot, 'spawn')]);
  assert.deepEqual(egressPids(process.pid), [egress.pid]);
  assert.deepEqual(slotPids(process.pid), [slot.pid]);
});
