// Reading /proc (src/common/proc.ts), shared by the page memory watchdog and the
// front's continue of stopped Chromium: a process names itself, and that name
// must not shift the fields read after it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { dying, parseStat, readOr } from '../../../src/common/proc.js';
import { until } from '../../helpers/wait.js';

test("a command name holding ') T 7 7' cannot pass a running process off as stopped, or in group 7", async () => {
  // SECURITY: a renderer can name itself (/proc/self/comm); the state and group are read after the last ')'.
  const child = spawn('bash', ['-c', "printf 'a) T 7 7 7 7 7' > /proc/$$/comm; read x"], {
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  try {
    await new Promise((r) => child.once('spawn', r));
    const pid = child.pid as number;
    const path = `/proc/${pid}/stat`;
    await until(() => readOr(path)?.includes('(a) T 7 7 7 7 7)') === true, 'the child to rename itself');
    const stat = parseStat(readOr(path) ?? '');
    assert.notEqual(stat.state, 'T');
    const pgrp = Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^NSpgid:\s+(\d+)/m)?.[1]);
    assert.equal(stat.pgrp, pgrp, 'its real process group');
    assert.ok(stat.startTicks > 0, 'its start time');
  } finally {
    child.kill('SIGKILL');
  }
});

test('parseStat reads state, parent, group, flags, CPU ticks (user + system) and start time by their place after the name', () => {
  // Fields 1-22 of proc(5), the name holding spaces and parentheses.
  const text = '42 (x (y) z) S 1 40 40 0 -1 4194560 100 0 0 0 30 12 0 0 20 0 1 0 987 0 0';
  assert.deepEqual(parseStat(text), {
    state: 'S',
    ppid: 1,
    pgrp: 40,
    flags: 4194560,
    cpuTicks: 42,
    startTicks: 987,
  });
});

test('readOr: a file that cannot be read (a process gone) is undefined, not a throw', () => {
  assert.equal(readOr('/proc/999999999/stat'), undefined);
});

test('dying: a live or stopped process is not; a killed one (SIGKILL pending, exiting, a zombie) and a gone one are', async () => {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  await new Promise((r) => child.once('spawn', r));
  const pid = child.pid as number;
  try {
    assert.equal(dying(pid), false);
    // A stopped process may be continued: not on its way out.
    process.kill(pid, 'SIGSTOP');
    await until(() => readOr(`/proc/${pid}/stat`)?.includes(') T ') === true, 'the child to stop');
    assert.equal(dying(pid), false, 'stopped is not dying');
  } finally {
    child.kill('SIGKILL');
  }
  // Killed: SIGKILL pending, exiting, a zombie not yet reaped (Node reaps it after this turn), or gone.
  assert.equal(dying(pid), true);
  await new Promise((r) => child.once('exit', r));
  assert.equal(dying(pid), true, 'gone');
});
