// Making a slot process and cleaning up after it. SECURITY: each is forked
// with a home and temporary directory of its slot's own, an environment from
// the allow-list (childEnv: no key, key file, Redis URL or metrics token), a
// hard V8 heap limit from the memory plan, its slot's user when the front runs
// as root, and in its slot's CPU cgroup before it launches Chromium. Once it
// has exited, its directory is removed and the Chromium processes it left
// stopped (the CPU pause) are continued, so that they see the closed pipe.
import { background } from '../../common/background.js';
import { SLOT_SEMI_SPACE_MB } from '../../common/config.js';
import type { Logger } from '../../common/log.js';
import { childDir, childEntry, childEnv, forkChild, logChildOutput, removeChildDir } from './child-start.js';
import type { CpuGroups } from './cpu-groups.js';
import { HEAP_EXHAUSTED } from './slot-memory.js';
import { SlotProcess, type Slot } from './slot-process.js';
import { continueStopped } from './stopped-chromium.js';

/** Forks slot `slot`'s process, named `index` at the egress process; its output goes to `logger`. */
export function forkSlot(
  slot: Slot,
  index: number,
  heapMb: number,
  groups: CpuGroups | undefined,
  logger: Logger,
): SlotProcess {
  // SECURITY: a home and temporary directory of the slot's own (Chromium's
  // profile goes there), which only its user may enter.
  const dir = childDir('pagescript-exec-', slot.runAs);
  const env = childEnv(dir);
  // Puppeteer makes a `debug` logger for every protocol message it sends or
  // receives, and each asks whether stderr is a terminal (a system call)
  // unless this says: ~2 ms of the process's CPU per request (profiled).
  env.DEBUG_COLORS = 'no';
  // SECURITY: the V8 heap of a slot's host side has a hard limit from the memory plan,
  // and its young generation a bound (config.ts SLOT_SEMI_SPACE_MB: unbounded, it ate the old space's room).
  const { file, execArgv } = childEntry('executor', { oldMb: heapMb, semiSpaceMb: SLOT_SEMI_SPACE_MB });
  const child = forkChild(file, execArgv, env, slot.runAs);
  // Placed before it is sent `init` (which launches its Chromium): its whole tree is born in the slot's group.
  if (child.pid !== undefined) groups?.place(slot.index, child.pid);
  const proc = new SlotProcess(child, dir, index, slot);
  logChildOutput(child, logger, { executor: child.pid, slot: slot.index }, 'executor output', (line) => {
    if (HEAP_EXHAUSTED.test(line)) proc.heapExhausted = true;
  });
  return proc;
}

/** After slot process `e` exited: removes its directory and continues what its CPU pause left stopped. */
export function cleanUpSlot(e: SlotProcess, logger: Logger): void {
  background(removeChildDir(e.dir, logger), 'removing a slot process directory', logger);
  // What the process's CPU pause left stopped runs again, sees the closed pipe and exits.
  const continued = continueStopped(e.browser.pids, e.slot.runAs?.uid ?? process.getuid?.() ?? -1);
  if (continued > 0)
    logger.warn({ executor: e.child.pid, continued }, 'continued Chromium processes a dead slot process left stopped');
}
