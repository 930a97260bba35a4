// Loaded (--import) into each test file's process when scripts/bootstrap.mjs
// runs files two at a time (--test-concurrency=2), so that a file runs beside
// another only where neither can disturb the other. Two flock(1) locks:
// - "alone": a file named in PAGESCRIPT_TEST_ALONE holds it exclusively (it
//   measures memory or time, or takes the machine: nothing runs beside it);
//   every other file shares it.
// - "serial": with PAGESCRIPT_TEST_SERIAL=1 (PAGESCRIPT_TEST_CONCURRENCY=1,
//   the default), every end-to-end file holds it exclusively, so they run one
//   at a time; a file named in PAGESCRIPT_TEST_BESIDE (the unit files, and
//   end-to-end files that mostly wait) does not take it and runs beside one.
// The locks are held by a child whose stdin is this process's: it ends, and the
// locks go, when this process ends in any way (a crash, SIGKILL).
import { spawn } from 'node:child_process';
import { once } from 'node:events';

const lockFile = process.env.PAGESCRIPT_TEST_LOCK;
// NODE_TEST_CONTEXT is set in the processes node:test starts for files, not in the runner itself.
if (lockFile && process.env.NODE_TEST_CONTEXT) {
  const named = (list) => (process.env[list] ?? '').split('\n').includes(process.argv[1] ?? '');
  const alone = named('PAGESCRIPT_TEST_ALONE');
  const serial = !alone && process.env.PAGESCRIPT_TEST_SERIAL === '1' && !named('PAGESCRIPT_TEST_BESIDE');
  // Always in the same order (alone, then serial), so two files cannot each hold the lock the other waits for.
  const hold = ['flock', alone ? '--exclusive' : '--shared', `${lockFile}.alone`];
  if (serial) hold.push('flock', '--exclusive', `${lockFile}.serial`);
  hold.push('sh', '-c', 'echo held; exec cat >/dev/null');
  const holder = spawn(hold[0], hold.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
  const [line] = await Promise.race([once(holder.stdout, 'data'), once(holder, 'exit')]);
  if (String(line).trim() !== 'held') throw new Error(`test-lock: flock could not take ${lockFile}`);
  holder.stdout.destroy();
  // Neither the holder nor its pipe keeps this process alive; its end closes the pipe.
  holder.stdin.unref();
  holder.unref();
}
