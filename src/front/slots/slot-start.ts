// Making a slot process and cleaning up after it. SECURITY: each is spawned
// with a home and temporary directory of its slot's own, an environment from
// the allow-list (childEnv: no key, key file, Redis URL or metrics token), a
// hard V8 heap limit from the memory plan, its slot's user when the front runs
// as root (taken by the process itself, and in a mount namespace of its own:
// slot-privacy.ts), and in its slot's cgroups before it launches Chromium. Once it
// has exited, its directory is removed.
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { background } from '../../common/background.js';
import { SLOT_SEMI_SPACE_MB } from '../../common/config.js';
import { slotPidFields, type Logger } from '../../common/log.js';
import {
  childDir,
  childEntry,
  childEnv,
  spawnChild,
  logChildOutput,
  removeChildDir,
} from '../child-guard/child-start.js';
import type { SlotGroups } from '../cgroups/slot-groups.js';
import { HEAP_EXHAUSTED } from './slot-memory.js';
import { SlotProcess, type Slot } from './slot-process.js';
import { privateTmpCommand, type SlotPrivacy } from '../host/slot-privacy.js';

/**
 * Forks slot `slot`'s process, named `index` at the egress process, with its channel to it (`egressChannel`,
 * EGRESS_CHANNEL_FD); its output goes to `logger`.
 * With `cpuProfileDir` (CPU_PROFILE_DIR), slot 0's processes write their CPU profiles in its `slot-0` folder.
 * With `privacy` (the front is root), it starts as root and drops to its user itself, in its own mount
 * namespace where one can be made (slot-privacy.ts).
 */
export function spawnSlot(
  slot: Slot,
  index: number,
  heapMb: number,
  groups: SlotGroups | undefined,
  logger: Logger,
  cpuProfileDir?: string,
  privacy?: SlotPrivacy,
  egressChannel?: Socket,
): SlotProcess {
  // One slot's profile is enough to see where a slot's time goes, and profiling the others would slow them too.
  const profileDir = cpuProfileDir !== undefined && slot.index === 0 ? join(cpuProfileDir, 'slot-0') : undefined;
  // A profiled slot keeps the machine's /tmp, where its profile goes (CPU_PROFILE_DIR: never in production).
  const tmp = slot.runAs && profileDir === undefined ? privacy?.tmp : undefined;
  const dropInProcess = slot.runAs !== undefined && privacy?.dropInProcess === true;
  // SECURITY: a home and temporary directory of the slot's own (Chromium's
  // profile goes there), which only its user may enter: in its mount
  // namespace, its tmpfs over /tmp; otherwise a directory of its own.
  const dir = tmp ? undefined : childDir('pagescript-exec-', slot.runAs);
  const env = childEnv(dir ?? '/tmp');
  // Puppeteer makes a `debug` logger for every protocol message it sends or
  // receives, and each asks whether stderr is a terminal (a system call)
  // unless this says (docs/performance.md, "Why the constants are what they are").
  env.DEBUG_COLORS = 'no';
  // SECURITY: the V8 heap of a slot's host side has a hard limit from the memory plan,
  // and its young generation a bound (config.ts SLOT_SEMI_SPACE_MB: unbounded, it ate the old space's room).
  const { file, execArgv } = childEntry('slot', { oldMb: heapMb, semiSpaceMb: SLOT_SEMI_SPACE_MB }, profileDir);
  const child = spawnChild(
    file,
    execArgv,
    env,
    dropInProcess ? undefined : slot.runAs,
    tmp ? privateTmpCommand(tmp) : undefined,
    dropInProcess && slot.runAs ? [`--run-as=${slot.runAs.uid}:${slot.runAs.gid}`] : [],
    egressChannel,
  );
  // Placed before it is sent `init` (which launches its Chromium): its whole tree is born in the slot's group.
  if (child.pid !== undefined) groups?.place(slot.index, child.pid);
  const proc = new SlotProcess(child, dir, index, slot);
  logChildOutput(child, logger, { ...slotPidFields(child.pid), slot: slot.index }, 'slot process output', (line) => {
    if (HEAP_EXHAUSTED.test(line)) proc.heapExhausted = true;
  });
  return proc;
}

/** After slot process `e` exited: removes its directory (its mount namespace's tmpfs went with it). */
export function cleanUpSlot(e: SlotProcess, logger: Logger): void {
  if (e.dir !== undefined) background(removeChildDir(e.dir, logger), 'removing a slot process directory', logger);
}
