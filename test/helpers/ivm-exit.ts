// isolated-vm's handles (isolates, scripts, contexts, copies) finalised during
// the process's exit abort it (SIGABRT, IsolateEnvironment::GetCurrent's
// assertion): with --experimental-test-coverage, Node collects once more as it
// takes the coverage at exit, and whichever wrapper no earlier collection had
// reached is finalised then. Releasing every handle (0280ace) was not enough:
// npm test still ended bundle-cache so once since (1c3be25's run; not seen in 25
// runs of the file alone). A full collection after the file's tests, while the
// environment is whole, finalises them first.
import { after } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Collects the garbage after this file's tests, so that no isolated-vm wrapper is left for the exit. */
export function collectBeforeExit(): void {
  after(() => {
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
  });
}
