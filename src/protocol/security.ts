// What a request tried that looks like an escape or a probe: the closed set of
// security event classes, one request's record of them, and the report a slot
// sends of the events only it can see. Data, types and pure checks only: the
// front scores a key by these (docs/security.md "Monitoring and blocking").
import { hasOnly, isCount, isList, isObject, isString } from './shape.js';

/**
 * The classes of security event, a closed set (docs/security.md):
 * - loopback: 127.0.0.0/8, ::1, 0.0.0.0/8, ::, localhost names
 * - private: 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, fec0::/10
 * - link-local: 169.254/16 (cloud metadata), fe80::/10
 * - own-address: an address of this machine, or the service's or the guard's own port
 * - reserved: every other special-purpose range (documentation, multicast, benchmarking…)
 * - scheme-or-port: a refused scheme (file:, chrome:…) or a port that is no port
 * - rebinding: a name that answered a public address and a refused one within one request
 * - refused-method: a page method or property the isolate refuses (browser(), target()…)
 * - slot-died: the request's slot process died or was killed during it (not a memory kill, not a timeout)
 * - kernel-lock: the kernel lock refused packets of the request's slot user (code outside Chromium's sandbox sent them)
 * - stray-process: a process of the request's slot outside its slot process's tree when the request ended
 */
export const SECURITY_CLASSES = [
  'loopback',
  'private',
  'link-local',
  'own-address',
  'reserved',
  'scheme-or-port',
  'rebinding',
  'refused-method',
  'slot-died',
  'kernel-lock',
  'stray-process',
] as const;
export type SecurityClass = (typeof SECURITY_CLASSES)[number];

/**
 * The classes that are signs of code escaped into the request's slot (docs/security.md): after a
 * request whose record has one, its slot process and Chromium are replaced before the next.
 */
export const SLOT_ESCAPE_CLASSES = ['slot-died', 'kernel-lock', 'stray-process'] as const;
export type SlotEscapeClass = (typeof SLOT_ESCAPE_CLASSES)[number];
const isEscapeClass = (c: SecurityClass): c is SlotEscapeClass => SLOT_ESCAPE_CLASSES.includes(c as SlotEscapeClass);

/** The classes an egress refusal can have: the kind of address (or name) refused. */
export type EgressRefusalKind = Exclude<SecurityClass, 'refused-method' | SlotEscapeClass>;
export const EGRESS_REFUSAL_KINDS: readonly EgressRefusalKind[] = SECURITY_CLASSES.filter(
  (c): c is EgressRefusalKind => c !== 'refused-method' && !isEscapeClass(c),
);

/**
 * How an event came about, which says how much it weighs:
 * - navigation: the request's own url, or a navigation the script made through the membrane (goto, frame.goto, request.continue)
 * - page: a connection the page made (a subresource, a redirect, a fetch, what HTML set by setContent makes): the guard
 *   cannot tell the script's from the page's
 * - script: a call the script made that the isolate refused
 * - process: the slot process itself
 */
export const SECURITY_VIAS = ['navigation', 'page', 'script', 'process'] as const;
export type SecurityVia = (typeof SECURITY_VIAS)[number];

/** How many events of one request are described one by one (logged once); the rest are counted. */
export const MAX_SECURITY_DETAILS = 20;
/** The longest description of one event (a URL is cut to it). */
export const MAX_SECURITY_DETAIL_CHARS = 300;

/** A count of one class of event that came about one way. */
export interface SecurityTally {
  readonly class: SecurityClass;
  readonly via: SecurityVia;
  readonly n: number;
}

/** What a slot saw of its request (navigations refused before the browser tried, refused methods): plain data. */
export interface SecurityReport {
  readonly tallies: readonly SecurityTally[];
  readonly details: readonly string[];
}

const isClass = (v: unknown): v is SecurityClass => SECURITY_CLASSES.includes(v as SecurityClass);
const isVia = (v: unknown): v is SecurityVia => SECURITY_VIAS.includes(v as SecurityVia);
export const isEgressRefusalKind = (v: unknown): v is EgressRefusalKind =>
  EGRESS_REFUSAL_KINDS.includes(v as EgressRefusalKind);

/**
 * SECURITY: a slot's report is read as data from a process that may run
 * escaped code: a closed set of classes, at most one tally per class and way,
 * at most MAX_SECURITY_DETAILS short lines. It can only raise its own key's score.
 */
export function isSecurityReport(r: unknown): r is SecurityReport {
  return (
    isObject(r) &&
    hasOnly(r, ['tallies', 'details']) &&
    Array.isArray(r.tallies) &&
    r.tallies.length <= SECURITY_CLASSES.length * SECURITY_VIAS.length &&
    isList(
      r.tallies,
      (t) => isObject(t) && hasOnly(t, ['class', 'via', 'n']) && isClass(t.class) && isVia(t.via) && isCount(t.n),
    ) &&
    Array.isArray(r.details) &&
    r.details.length <= MAX_SECURITY_DETAILS &&
    isList(r.details, (d) => isString(d) && d.length <= MAX_SECURITY_DETAIL_CHARS)
  );
}

const cutDetail = (s: string): string =>
  s.length <= MAX_SECURITY_DETAIL_CHARS ? s : `${s.slice(0, MAX_SECURITY_DETAIL_CHARS - 1)}…`;

/**
 * One request's security events: counts by class and way (bounded by the closed
 * sets), and the first MAX_SECURITY_DETAILS described. The slot keeps one for
 * what it sees, the front one for the whole request (its slot's report, the
 * egress guard's refusals, the slot process's end).
 */
export class SecurityRecord {
  readonly #counts = new Map<string, number>();
  readonly #details: string[] = [];
  #omitted = 0;

  /** Counts one event; its detail is kept if fewer than MAX_SECURITY_DETAILS are. */
  add(cls: SecurityClass, via: SecurityVia, detail: string, n = 1): void {
    const k = `${cls} ${via}`;
    this.#counts.set(k, (this.#counts.get(k) ?? 0) + n);
    if (this.#details.length < MAX_SECURITY_DETAILS) this.#details.push(cutDetail(`${cls} (${via}): ${detail}`));
    else this.#omitted += n;
  }

  /**
   * Adds a report (checked with isSecurityReport) of another process's record. Its events
   * not described here (those it did not describe, and those past this record's bound) are omitted.
   */
  addReport(r: SecurityReport): void {
    let events = 0;
    for (const t of r.tallies) {
      const k = `${t.class} ${t.via}`;
      this.#counts.set(k, (this.#counts.get(k) ?? 0) + t.n);
      events += t.n;
    }
    let described = 0;
    for (const d of r.details) {
      if (this.#details.length >= MAX_SECURITY_DETAILS) break;
      this.#details.push(cutDetail(d));
      described++;
    }
    this.#omitted += Math.max(0, events - described);
  }

  get empty(): boolean {
    return this.#counts.size === 0;
  }

  /** The signs of an escape into the request's slot this record holds (none: an empty list). */
  escapeSigns(): SlotEscapeClass[] {
    return [...new Set(this.tallies().flatMap((t) => (isEscapeClass(t.class) ? [t.class] : [])))];
  }

  tallies(): SecurityTally[] {
    const out: SecurityTally[] = [];
    for (const [k, n] of this.#counts) {
      const [cls, via] = k.split(' ') as [SecurityClass, SecurityVia];
      out.push({ class: cls, via, n });
    }
    return out;
  }

  /** Counts by class, every way together: for the request's log line and the metrics. */
  byClass(): Partial<Record<SecurityClass, number>> {
    const out: Partial<Record<SecurityClass, number>> = {};
    for (const t of this.tallies()) out[t.class] = (out[t.class] ?? 0) + t.n;
    return out;
  }

  /** The events described (each logged once), and how many more there were. */
  details(): { readonly details: readonly string[]; readonly omitted: number } {
    return { details: [...this.#details], omitted: this.#omitted };
  }

  report(): SecurityReport {
    return { tallies: this.tallies(), details: [...this.#details] };
  }
}
