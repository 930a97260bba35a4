// Which root the front is, read from /proc/self: root of the machine (the
// host's own user namespace: a host, or a container started as root without a
// user namespace, Docker's default), root of a user namespace of its own (a
// container with `--userns`, a pod with `hostUsers: false`), or not root; and
// which capabilities it holds. As root of its own user namespace the front does
// what it does as root on a host with what the runtime gave it, and says what
// it lacks (/health, the start's log) instead of failing.
import { readFileSync } from 'node:fs';

/** The capabilities the front uses as root, by their bit (capability.h). */
export const CAPS = {
  CHOWN: 0,
  DAC_OVERRIDE: 1,
  FOWNER: 3,
  KILL: 5,
  SETGID: 6,
  SETUID: 7,
  NET_ADMIN: 12,
  SYS_CHROOT: 18,
  SYS_ADMIN: 21,
} as const;
export type Cap = keyof typeof CAPS;

/**
 * Whether a /proc/<pid>/uid_map is the host's own user namespace: the one line
 * that maps every uid to itself. Any other map is a namespace made below it.
 */
export function isHostUserNamespace(uidMap: string): boolean {
  const lines = uidMap.trim().split('\n');
  return lines.length === 1 && /^\s*0\s+0\s+4294967295\s*$/.test(lines[0] ?? '');
}

/** A field of /proc/<pid>/status (`CapEff`, `NoNewPrivs`, …), '' when missing. */
function statusField(status: string, field: string): string {
  return new RegExp(`^${field}:[ \\t]*(.*)$`, 'm').exec(status)?.[1]?.trim() ?? '';
}

/** Whether a capability mask (hex, as /proc/<pid>/status gives it) holds `cap`. */
export function hasCap(mask: string, cap: Cap): boolean {
  return /^[0-9a-f]+$/i.test(mask) && ((BigInt(`0x${mask}`) >> BigInt(CAPS[cap])) & 1n) === 1n;
}

export interface Privileges {
  /** uid 0 (of whichever user namespace). */
  readonly root: boolean;
  /** Root of the host's own user namespace (the machine's root), not of a namespace made below it. */
  readonly hostRoot: boolean;
  /** The capabilities held now (effective), and the ones a process of it may ever hold (the bounding set). */
  readonly effective: string;
  readonly bounding: string;
  /** no_new_privs: set-uid files give nothing (Chromium's SUID sandbox helper among them). */
  readonly noNewPrivs: boolean;
}

/** This process's privileges (texts given: for tests). */
export function privileges(
  texts: { readonly uidMap?: string; readonly status?: string; readonly uid?: number } = {},
): Privileges {
  const status = texts.status ?? readFileSync('/proc/self/status', 'utf8');
  const uid = texts.uid ?? process.getuid?.() ?? -1;
  return {
    root: uid === 0,
    hostRoot: uid === 0 && isHostUserNamespace(texts.uidMap ?? readFileSync('/proc/self/uid_map', 'utf8')),
    effective: statusField(status, 'CapEff'),
    bounding: statusField(status, 'CapBnd'),
    noNewPrivs: statusField(status, 'NoNewPrivs') === '1',
  };
}

/** Which of `caps` root lacks (effective), for what it says at start. */
export function lacking(p: Privileges, caps: readonly Cap[], mask: 'effective' | 'bounding' = 'effective'): Cap[] {
  return caps.filter((c) => !hasCap(p[mask], c));
}
