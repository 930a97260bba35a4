// Which free slot a job takes: a pure choice over the free slots' last key and
// their Chromium's readiness, so that a slot whose Chromium a heavy request
// made relaunch is left to that request's key, and a ready context is taken
// before one that would make the request wait. The supervisor (supervisor.ts)
// picks among the slots whose process serves; test/unit/front/slot-choice.test.ts.
import type { BrowserStatus } from '../../protocol/slot-wire.js';
import { ACTIVE_GRACE_MS } from '../tenancy/scheduler.js';
import type { Slot } from './slot-process.js';

/**
 * Which free slot a job of `client` takes (undefined: none, it waits). Not one another key used within
 * ACTIVE_GRACE_MS while another is free, or while one of `restarting` (slots whose process is being
 * started or replaced) was this key's: that key is between two requests, and
 * a slot whose Chromium is relaunched after a heavy request is then left to
 * the key whose request made it so. Among those, one whose Chromium has a
 * context ready (a relaunching one would make the request wait); else the lowest.
 */
export function choose<S extends Pick<Slot, 'last'> & { proc?: { browser: BrowserStatus } | undefined }>(
  free: readonly S[],
  client: string | undefined,
  now: number,
  restarting: readonly Pick<Slot, 'last'>[] = [],
): S | undefined {
  const othersRecent = (s: S): boolean =>
    s.last !== undefined && s.last.client !== client && now - s.last.at < ACTIVE_GRACE_MS;
  const preferred = free.filter((s) => !othersRecent(s));
  // A key whose own slot's process is being replaced (its request killed it: a memory ceiling, a deadline) waits
  // for it rather than take the slot another key is between two requests on: that key would then wait for the
  // replacement and run on it cold (the neighbour bench's isolate memory bomb, docs/performance.md).
  if (preferred.length === 0 && client !== undefined && restarting.some((s) => s.last?.client === client))
    return undefined;
  const pool = preferred.length > 0 ? preferred : free;
  // SECURITY: the slot's word of its contexts only orders slots the front already lets take the job (serving,
  // not another key's of late). A slot that says "ready" falsely is given no more than one truly ready (which a
  // slot's own code can make itself), and one that says "not ready" only sends work elsewhere.
  return pool.find((s) => s.proc?.browser.ready === true && s.proc.browser.contextsReady > 0) ?? pool[0];
}
