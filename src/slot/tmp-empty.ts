// Emptying a slot's temporary directory after each job. SECURITY: what one
// request's page or processes wrote there (a download, a file left by code
// that escaped) is gone before the next request of any key; only the live
// Chromium's own profile stays. Where the slot has a mount namespace of its
// own, that directory is its tmpfs, which is also its /var/tmp, /dev/shm and
// /run/lock (src/front/host/slot-privacy.ts). Done as the slot's user, who
// owns everything there: a tree it made unwritable is made writable first.
import { chmod, lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PROFILE_PREFIX } from './browser/chromium-process.js';

/** How many entries one emptying removes at most before it gives up (the tmpfs holds SLOT_TMP_INODES at most). */
const MAX_ENTRIES = 100_000;

/**
 * Removes everything in `dir` but the directories in `keep` (and, while a
 * Chromium is being started, every profile directory: its own is not known
 * yet). Throws when something could not be removed.
 */
export async function emptyTmp(dir: string, keep: { dirs: ReadonlySet<string>; making: number }): Promise<number> {
  let removed = 0;
  for (const name of await readdir(dir)) {
    const path = join(dir, name);
    if (keep.dirs.has(path) || (keep.making > 0 && name.startsWith(PROFILE_PREFIX))) continue;
    removed += await removeTree(path, MAX_ENTRIES - removed);
  }
  return removed;
}

/** Removes `path` (a file, a link or a tree), making each directory of it writable first; how many entries went. */
async function removeTree(path: string, budget: number): Promise<number> {
  if (budget <= 0) throw new Error('too many files to remove');
  const st = await lstat(path);
  let n = 1;
  if (st.isDirectory()) {
    // Its owner may always chmod it: a directory it made read-only is no hiding place.
    if ((st.mode & 0o700) !== 0o700) await chmod(path, 0o700);
    for (const name of await readdir(path)) n += await removeTree(join(path, name), budget - n);
  }
  await rm(path, { recursive: st.isDirectory(), force: true });
  return n;
}
