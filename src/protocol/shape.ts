// Checks of the plain data that crosses a process boundary: what the front
// reads of a child's message is checked with these before it is believed.

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
export const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
export const isPort = (v: unknown): boolean => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65_535;
/** A finite amount that is not negative (seconds, bytes). */
export const isSeconds = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/**
 * More items than any list a slot process sends holds (MAX_LOG_LINES is at most
 * 100 000, pids one per Chromium of a slot, page calls a few dozen).
 */
export const MAX_WIRE_LIST = 200_000;

/**
 * SECURITY: a list of at most MAX_WIRE_LIST items, each one checked, holes
 * included. Structured clone sends a sparse array by its length: a message of
 * a few bytes can be an array of 2^32 - 1 holes, and Array.prototype.every
 * visits every index (minutes of the front's event loop), skipping the holes.
 */
export function isList(v: unknown, is: (item: unknown) => boolean): boolean {
  if (!Array.isArray(v) || v.length > MAX_WIRE_LIST) return false;
  for (let i = 0; i < v.length; i++) if (!is(v[i])) return false;
  return true;
}

export const isOptional = (v: unknown, is: (v: unknown) => boolean): boolean => v === undefined || is(v);
export const isString = (v: unknown): v is string => typeof v === 'string';
export const isLogs = (v: unknown): boolean => isList(v, isString);
/**
 * SECURITY: no field but the named ones. What the front copies whole (failure
 * details into the reply, timings into Server-Timing) must hold nothing it does
 * not check: structured clone carries values JSON cannot write (a BigInt, a cycle),
 * and a reply that throws as it is written is never sent.
 */
export const hasOnly = (o: Record<string, unknown>, keys: readonly string[]): boolean =>
  Object.keys(o).every((k) => keys.includes(k));
