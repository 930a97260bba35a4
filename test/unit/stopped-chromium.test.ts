// The front continues what a killed executor left stopped (src/front/children/stopped-chromium.ts):
// only stopped processes, only in the groups named, only of the executor's user.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { test } from 'node:test';
import { continueStopped } from '../../src/front/children/stopped-chromium.js';
import { statFields } from '../helpers/system.js';
import { until } from '../helpers/wait.js';

/** A process leading a group of its own (as a lane's Chromium does), stopped. */
async function stoppedGroup(): Promise<ChildProcess & { pid: number }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' });
  await new Promise((r) => child.once('spawn', r));
  process.kill(child.pid as number, 'SIGSTOP');
  await until(() => statFields(child.pid as number)?.[0] === 'T', 'the process to be stopped');
  return child as ChildProcess & { pid: number };
}

const uid = process.getuid?.() ?? -1;

test('a stopped process of a named group and of the executor user is continued', async () => {
  const a = await stoppedGroup();
  try {
    assert.equal(continueStopped([a.pid], uid), 1);
    await until(() => statFields(a.pid)?.[0] !== 'T', 'the process to run');
    assert.equal(continueStopped([a.pid], uid), 0, 'a running process is left alone');
  } finally {
    a.kill('SIGKILL');
  }
});

test('a group not named, another user, or the groups 0 and 1 (every process): nothing is continued', async () => {
  const a = await stoppedGroup();
  try {
    assert.equal(continueStopped([a.pid + 100_000], uid), 0);
    assert.equal(continueStopped([a.pid], uid + 1), 0, 'another user');
    assert.equal(continueStopped([0, 1, -1, -a.pid, Number.NaN], uid), 0);
    assert.equal(statFields(a.pid)?.[0], 'T');
  } finally {
    a.kill('SIGKILL');
  }
});
