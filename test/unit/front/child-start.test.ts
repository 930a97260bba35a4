// How the front starts a child (src/front/child-guard/child-start.ts), with a stand-in child: a
// child that never says ready is killed at its deadline; one that sends what
// the front cannot read is killed, not the front; its output is logged line by
// line, each line bounded.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { Duplex, PassThrough } from 'node:stream';
import { test } from 'node:test';
import {
  MAX_OUTPUT_LINE,
  awaitReady,
  childEntry,
  logChildOutput,
  removeChildDir,
  sendToChild,
  stopChild,
  writeChildLine,
  type ReadyWatch,
} from '../../../src/front/child-guard/child-start.js';
import { createLogger, slotPidFields } from '../../../src/common/log.js';
import { until } from '../../helpers/wait.js';

type Msg = { readonly type: 'ready' } | { readonly type: 'note'; readonly n: number };

function fakeChild() {
  const emitter = new EventEmitter();
  const kills: string[] = [];
  const sent: string[] = [];
  // The front's end of the child's wire (FRONT_WIRE_FD): what the test pushes is what the child said.
  const wire = new Duplex({
    read: () => undefined,
    write: (chunk: Buffer, _enc, done) => {
      sent.push(String(chunk));
      done();
    },
  });
  const child = Object.assign(emitter, {
    pid: 4242,
    stdout: new PassThrough(),
    stderr: new PassThrough(),
    stdio: [null, null, null, wire],
    kill: (signal: string) => kills.push(signal),
  });
  /** The child says `msg` (a line of JSON); resolves once the front has read it. */
  const say = async (msg: unknown): Promise<void> => {
    wire.push(`${JSON.stringify(msg)}\n`);
    await new Promise((resolve) => setImmediate(resolve));
  };
  return {
    child: child as unknown as ChildProcess,
    emitter,
    kills,
    stdout: child.stdout,
    stderr: child.stderr,
    wire,
    say,
    sent,
  };
}

function logLines() {
  const raw: string[] = [];
  const logger = createLogger('info', { write: (line: string) => void raw.push(line) });
  return { logger, lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

function watch(logger: ReturnType<typeof logLines>['logger'], kill: () => void) {
  const seen: Msg[] = [];
  const exits: Array<number | null> = [];
  let ready = false;
  let begun = 0;
  const w: ReadyWatch<Msg> = {
    logger,
    timeoutMs: 1_000,
    maxMessageBytes: 1024,
    maxMessageTokens: 64,
    begin: () => void begun++,
    check: (raw) => {
      const m = raw as Msg;
      if (m?.type !== 'ready' && !(m?.type === 'note' && typeof m.n === 'number')) throw new Error('not a message');
      return m;
    },
    onMessage: (m) => {
      seen.push(m);
      if (m.type === 'ready') ready = true;
    },
    kill,
    wasReady: () => ready,
    onExit: (code) => void exits.push(code),
    words: { timeout: 'child late', badMessage: 'child bad', error: 'child error', who: 'the child' },
  };
  return { w, seen, exits, begun: () => begun };
}

/** A stand-in child being awaited, whose kills through the caller are counted. */
function awaited() {
  const fake = fakeChild();
  const log = logLines();
  let killed = 0;
  const { w, seen } = watch(log.logger, () => void killed++);
  const waiting = awaitReady(fake.child, w);
  return { ...fake, log, seen, waiting, killed: () => killed };
}

test('a child that never says ready is killed at its deadline, and the wait fails when it exits', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { child, emitter, kills } = fakeChild();
  const log = logLines();
  const { w, begun } = watch(log.logger, () => assert.fail('no bad message was sent'));
  const waiting = awaitReady(child, w);
  assert.equal(begun(), 1, 'its first message is sent once the listeners are in place');
  t.mock.timers.tick(999);
  assert.deepEqual(kills, [], 'not before the deadline');
  t.mock.timers.tick(1);
  assert.deepEqual(kills, ['SIGKILL']);
  assert.ok(log.lines().some((l) => l.msg === 'child late' && l.pid === 4242 && l.ms === 1_000));
  emitter.emit('exit', null, 'SIGKILL');
  await assert.rejects(waiting, /^Error: the child exited before it was ready \(SIGKILL\)$/);
});

test('ready ends the wait: the deadline passes without a kill, and a later exit is handed on, not a failure', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { child, emitter, kills, say } = fakeChild();
  const { w, seen, exits } = watch(logLines().logger, () => assert.fail('no bad message was sent'));
  const waiting = awaitReady(child, w);
  await say({ type: 'note', n: 1 });
  await say({ type: 'ready' });
  await waiting;
  t.mock.timers.tick(5_000);
  assert.deepEqual(kills, []);
  emitter.emit('exit', 0, null);
  assert.deepEqual(seen, [{ type: 'note', n: 1 }, { type: 'ready' }], 'every message is handed on, in order');
  assert.deepEqual(exits, [0]);
});

test('a message the front cannot read kills the child (through the caller), is logged, and is not handed on', async () => {
  const { emitter, log, seen, waiting, killed, say } = awaited();
  await say({ type: 'constructor' });
  assert.equal(killed(), 1);
  assert.deepEqual(seen, []);
  assert.ok(log.lines().some((l) => l.msg === 'child bad' && l.pid === 4242));
  emitter.emit('exit', null, 'SIGKILL');
  await assert.rejects(waiting, /exited before it was ready/);
});

test('a child that says ready a second time is killed: each was logged, or had every grant sent again', async () => {
  const { seen, waiting, killed, say } = awaited();
  await say({ type: 'ready' });
  await waiting;
  await say({ type: 'ready' });
  assert.equal(killed(), 1);
  assert.deepEqual(seen, [{ type: 'ready' }], 'the second is not handed on');
});

test('awaitReady bounds what the child sends: a line that is not JSON, or longer than its bound, kills the child, not the front', async () => {
  for (const line of ['\u0000\u0005\u00ff{\n', `${JSON.stringify({ type: 'note', n: 'x'.repeat(2000) })}\n`]) {
    const { emitter, wire, log, waiting, killed } = awaited();
    wire.push(line);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(killed(), 1);
    assert.ok(log.lines().some((l) => l.msg === 'child bad' && l.pid === 4242 && typeof l.reason === 'string'));
    emitter.emit('exit', null, 'SIGKILL');
    await assert.rejects(waiting, /exited before it was ready/);
  }
});

test('the front writes a child its messages as JSON lines, an undefined field left out', async () => {
  const { child, emitter, sent } = fakeChild();
  const { w } = watch(logLines().logger, () => assert.fail('no bad message was sent'));
  const waiting = awaitReady(child, {
    ...w,
    begin: () => sendToChild(child, { type: 'init', a: undefined, b: null, c: [1] }),
  });
  assert.deepEqual(sent, ['{"type":"init","b":null,"c":[1]}\n']);
  emitter.emit('exit', 0, null);
  await assert.rejects(waiting, /exited before it was ready/);
});

test("a child's directory that cannot be removed (its user's process writing on into it) is logged, never thrown: it ended the front", async () => {
  const log = logLines();
  // procfs: whatever is done, its entries cannot be removed (EPERM), as deterministic as a failure gets.
  await removeChildDir('/proc/self/fdinfo', log.logger);
  assert.ok(
    log
      .lines()
      .some((l) => l.msg === "a child process's directory could not be removed" && l.dir === '/proc/self/fdinfo'),
  );
});

test("a child's fatal line is written as an error (pino writes a fatal line synchronously: a child's flood of them froze the front)", () => {
  const { child } = fakeChild();
  const log = logLines();
  writeChildLine(child, log.logger, JSON.stringify({ level: 60, msg: 'forged fatal' }), { slotPid: 4242 }, 'slot');
  const line = log.lines().find((l) => l.msg === 'forged fatal');
  assert.equal(line?.level, 50);
  assert.equal(line?.fatal, true);
  assert.equal(line?.slotPid, 4242);
});

test("a slot process's line names it by slotPid and, for one release, by executor, its deprecated name; a forged one is overwritten", () => {
  const { child } = fakeChild();
  const log = logLines();
  const forged = JSON.stringify({ level: 30, msg: 'said', slotPid: 1, executor: 1 });
  writeChildLine(child, log.logger, forged, { ...slotPidFields(4242), slot: 0 }, 'slot process');
  const line = log.lines().find((l) => l.msg === 'said');
  assert.equal(line?.slotPid, 4242);
  assert.equal(line?.executor, 4242);
});

test("a child's stdout and stderr are logged line by line with who wrote them; a long line is cut, with the count", async () => {
  const { child, stdout, stderr } = fakeChild();
  const log = logLines();
  logChildOutput(child, log.logger, { slotPid: 4242 }, 'child output');
  stdout.write('first\nsec');
  stdout.write('ond\n');
  stderr.write('x'.repeat(MAX_OUTPUT_LINE + 10) + '\n');
  const output = (): Array<Record<string, unknown>> => log.lines().filter((l) => l.msg === 'child output');
  await until(() => output().length === 3, 'the three lines to be logged');
  const lines = output().map(({ slotPid, stream, line, cutChars, level }) => ({
    slotPid,
    stream,
    line,
    cutChars,
    level,
  }));
  assert.deepEqual(lines, [
    { slotPid: 4242, stream: 'stdout', line: 'first', cutChars: undefined, level: 40 },
    { slotPid: 4242, stream: 'stdout', line: 'second', cutChars: undefined, level: 40 },
    { slotPid: 4242, stream: 'stderr', line: 'x'.repeat(MAX_OUTPUT_LINE), cutChars: 10, level: 40 },
  ]);
});

test('stopChild: a child that exits when asked is not killed; one that does not is killed at the deadline', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const polite = fakeChild();
  const asked: string[] = [];
  const politeStop = stopChild(
    polite.child,
    () => {
      asked.push('polite');
      polite.emitter.emit('exit', 0, null);
    },
    1_000,
  );
  await politeStop;
  t.mock.timers.tick(1_000);
  assert.deepEqual(polite.kills, []);
  const deaf = fakeChild();
  const deafStop = stopChild(deaf.child, () => asked.push('deaf'), 1_000);
  t.mock.timers.tick(999);
  assert.deepEqual(deaf.kills, [], 'not before the deadline');
  t.mock.timers.tick(1);
  assert.deepEqual(deaf.kills, ['SIGKILL']);
  deaf.emitter.emit('exit', null, 'SIGKILL');
  await deafStop;
  assert.deepEqual(asked, ['polite', 'deaf']);
});

test('a child given a heap gets its old-space limit and a bounded young generation; one given none gets neither', () => {
  const slot = childEntry('slot', { oldMb: 94, semiSpaceMb: 16 }).execArgv;
  assert.ok(slot.includes('--max-old-space-size=94'), slot.join(' '));
  assert.ok(slot.includes('--max-semi-space-size=16'), slot.join(' '));
  const egress = childEntry('egress-process').execArgv;
  assert.ok(!egress.some((a) => /^--max-(old|semi)-space-size=/.test(a)), egress.join(' '));
});

test('a child given a profile directory writes a CPU profile there; one given none is not profiled', () => {
  const profiled = childEntry('egress-process', undefined, '/tmp/profiles/egress').execArgv;
  assert.ok(profiled.includes('--cpu-prof'), profiled.join(' '));
  assert.ok(profiled.includes('--cpu-prof-dir=/tmp/profiles/egress'), profiled.join(' '));
  const plain = childEntry('slot', { oldMb: 94, semiSpaceMb: 16 }).execArgv;
  assert.ok(!plain.some((a) => a.startsWith('--cpu-prof')), plain.join(' '));
});
