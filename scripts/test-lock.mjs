// Loaded (--import) into each test file's process when scripts/bootstrap.mjs
// runs files side by side: a file named in PAGESCRIPT_TEST_ALONE holds the
// run's lock file exclusively, every other file shares it, so a file that
// measures time or takes the machine never runs beside another one. The lock
// is flock(1)'s, held by a child whose stdin is this process's: it ends, and
// the lock goes, when this process ends in any way (a crash, SIGKILL).
import { spawn } from 'node:child_process';
import { once } from 'node:events';

const lockFile = process.env.PAGESCRIPT_TEST_LOCK;
// NODE_TEST_CONTEXT is set in the processes node:test starts for files, not in the runner itself.
if (lockFile && process.env.NODE_TEST_CONTEXT) {
  const alone = (process.env.PAGESCRIPT_TEST_ALONE ?? '').split('\n').includes(process.argv[1] ?? '');
  const holder = spawn(
    'flock',
    [alone ? '--exclusive' : '--shared', lockFile, '-c', 'echo held; exec cat >/dev/null'],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const [line] = await Promise.race([once(holder.stdout, 'data'), once(holder, 'exit')]);
  if (String(line).trim() !== 'held') throw new Error(`test-lock: flock could not take ${lockFile}`);
  holder.stdout.destroy();
  // Neither the holder nor its pipe keeps this process alive; its end closes the pipe.
  holder.stdin.unref();
  holder.unref();
}
