// The one gate through which a test changes a child process: data-only seams,
// sent in the `seam` field of a child's init message only when a test starts
// the service with them (never from configuration or a request).
import type { GuardLimits } from './egress.js';

/**
 * A data-only test seam: names answered from a table instead of DNS, upstream
 * connections limited to loopback, and faults on request. Functions cannot
 * cross a process hop, so tests describe a resolver and a connector here as
 * data. The front sends it only when a test asks.
 */
export interface SlotTestSeam {
  /**
   * host → answers; each lookup of the host takes the next answer, in turn. Names not listed do not resolve.
   * Absent: the system's resolver (a test of what Chromium does on its own).
   */
  readonly hosts?: Readonly<Record<string, readonly (readonly string[])[]>>;
  /** Refuse (ECONNREFUSED) every upstream that is not 127.0.0.1 or ::1, without dialling it. */
  readonly loopbackOnly: boolean;
  /** Report each upstream the guard dials ({ type: 'dial' }). */
  readonly reportDials: boolean;
  /** Obey { type: 'fault' }: a test of what happens when a slot process fails in a way no script can cause. */
  readonly faults: boolean;
  /** This machine's own addresses, for the egress checker, instead of the system's interfaces. */
  readonly localAddresses?: readonly string[];
  /**
   * Loopback address:port pairs the egress checker judges as public servers: the
   * stand-ins for the Internet through which tests reach a target via an upstream
   * proxy (a local or allow-listed target never goes through one).
   */
  readonly publicTargets?: readonly { readonly address: string; readonly port: number }[];
  /** The guard's limits, where a test lowers them. */
  readonly guardLimits?: Partial<GuardLimits>;
  /** The slot process's V8 heap limit (--max-old-space-size), where a test makes it run out. */
  readonly heapMb?: number;
  /**
   * SPKI hashes (base64 SHA-256) of throw-away certificates the slots' Chromium
   * takes as valid (BrowserHost's testTrustedSpki): an https fixture on loopback.
   */
  readonly trustedSpki?: readonly string[];
  /**
   * The first this many emptyings of the clipboard in each slot process fail
   * (a Chromium whose clipboard cannot be emptied, or not in time): a test of
   * the service's own preparation failing before a request.
   */
  readonly clipboardFailures?: number;
  /**
   * The first this many emptyings of the clipboard in each slot process never
   * answer (a Chromium frozen in it): its lease is late past the front's deadline.
   */
  readonly clipboardHangs?: number;
}

/** The data-only test seam of the egress process: the part of SlotTestSeam that is the guard's. */
export interface EgressTestSeam {
  readonly hosts?: SlotTestSeam['hosts'];
  readonly loopbackOnly: boolean;
  readonly reportDials: boolean;
  /** Obey { type: 'fault' } (a test of an egress process that fails or misbehaves). */
  readonly faults: boolean;
  readonly localAddresses?: readonly string[];
  readonly publicTargets?: SlotTestSeam['publicTargets'];
  readonly guardLimits?: Partial<GuardLimits>;
}

/**
 * The failures a test may ask of a slot process or of the egress process
 * (seam.faults); `hang` (a main thread that never yields), `bloat` (memory
 * outside V8's heap, grown without end), `retain` (its message's MiB outside
 * V8's heap, kept for the process's life), `raw` and `unwire` are a slot
 * process's only. `raw`: bytes written to the front's wire's descriptor past
 * its framing, as code that escaped into the process could write them
 * (RawFault); `unwire`: that wire closed by a process that lives on.
 */
export type FaultKind = 'throw' | 'reject' | 'oom' | 'send' | 'hang' | 'bloat' | 'retain' | 'raw' | 'unwire';

/** A `raw` fault's message: `bytes` (Base64) written as they are, then `thenMiB` MiB of filler. */
export interface RawFault {
  readonly bytes: string;
  readonly thenMiB?: number;
}
