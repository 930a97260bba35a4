// The page memory watchdog's tree where the kernel holds the page's memory:
// read from its Chromium group's member list, each member placed by its parents.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { cgroupSource } from '../../../src/slot/browser/page-memory.js';

test('a process in the Chromium group outside its tree (a double fork) is not the request’s', (t) => {
  // A child of this process (in the tree, depth 1), and an orphan: its parent
  // shell exited, so it was reparented out of the tree, as an escape would be.
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  const orphan = Number(spawnSync('sh', ['-c', 'sleep 30 >/dev/null 2>&1 & echo $!'], { encoding: 'utf8' }).stdout);
  t.after(() => {
    child.kill('SIGKILL');
    try {
      process.kill(orphan, 'SIGKILL');
    } catch {
      // gone
    }
  });
  assert.ok(Number.isSafeInteger(child.pid) && Number.isSafeInteger(orphan) && orphan > 0);
  const procs = join(mkdtempSync(join(tmpdir(), 'pagescript-cgroup-test-')), 'cgroup.procs');
  // The list as the kernel writes it: one pid a line, the root among them, and a pid that is gone.
  writeFileSync(procs, `${process.pid}\n${child.pid}\n${orphan}\n999999999\n`);
  const tree = cgroupSource(procs).tree(process.pid);
  const byPid = new Map(tree.map((p) => [p.pid, p]));
  assert.equal(byPid.get(process.pid)?.depth, 0);
  assert.equal(byPid.get(process.pid)?.type, 'browser');
  assert.equal(byPid.get(child.pid as number)?.depth, 1);
  assert.ok(!byPid.has(orphan), 'the orphan is in the group but not in the tree');
  assert.equal(tree.length, 2);
  // Memory is the kernel's to count there: not read.
  assert.ok(tree.every((p) => p.bytes === 0));
});

test('a Chromium’s tree from its group lists no process when the group cannot be read', () => {
  assert.deepEqual(cgroupSource('/nonexistent/cgroup.procs').tree(process.pid), []);
});
