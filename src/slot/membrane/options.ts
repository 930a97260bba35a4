// The checker of a script's options: every options object a script passes to a
// Puppeteer method is rebuilt here from the keys its schema allows and values
// checked against it (option-schemas.ts has the schemas). The script's own
// object never reaches Puppeteer. Timeouts are capped by the deadline (deadline.ts).
import { PUPPETEER_DEFAULT_TIMEOUT_MS, capToDeadline, type Clock } from './deadline.js';

export class MembraneError extends Error {
  override name = 'Error';
}

/** An option refused for what it would do on the server (a security event of the request's key). */
export class RefusedOptionError extends MembraneError {}

/** Options that would touch the server's disk or run programs: refused by name. */
const DISK_OPTIONS: Readonly<Record<string, string>> = {
  path: 'it would read or write files on the server',
  userDataDir: 'it would use a directory on the server',
  downloadPath: 'it would write files on the server',
  ffmpegPath: 'it would run a program on the server',
  executablePath: 'it would run a program on the server',
};

export type Check =
  | 'string'
  | 'number'
  | 'boolean'
  | 'timeout'
  | 'stringArray'
  | 'record'
  | readonly string[]
  | ((v: unknown, where: string) => unknown);

export type Schema = Readonly<Record<string, Check>>;

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A timeout option, capped by the script's remaining time (capToDeadline); undefined when the script gave none. */
export function clampTimeout(v: unknown, clock: Clock, where: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  return capToDeadline(timeoutMs(v, where), clock);
}

/** The page's default for a wait with no timeout of its own (navigations: the navigation default), capped. */
function defaultTimeout(schema: Schema, clock: Clock): number {
  const navigation = 'waitUntil' in schema;
  return capToDeadline(clock.defaultTimeoutMs?.(navigation) ?? PUPPETEER_DEFAULT_TIMEOUT_MS, clock);
}

/** A timeout a script gives: a number of milliseconds, 0 meaning no timeout (as in Puppeteer). */
export function timeoutMs(v: unknown, where: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
    throw new MembraneError(`${where}: timeout must be a number of milliseconds`);
  return v;
}

export function options(v: unknown, schema: Schema, clock: Clock, where: string): Record<string, unknown> {
  if (v === undefined || v === null) {
    return 'timeout' in schema ? withSignal({ timeout: defaultTimeout(schema, clock) }, clock) : {};
  }
  if (!isPlainObject(v)) throw new MembraneError(`${where}: options must be an object`);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(v)) {
    const why = DISK_OPTIONS[key];
    // A schema that names the key means something else by it (a cookie's URL path).
    if (why !== undefined && !(key in schema) && v[key] !== undefined) {
      throw new RefusedOptionError(`${where}: the "${key}" option is not available in pagescript (${why})`);
    }
  }
  for (const [key, check] of Object.entries(schema)) {
    const value = v[key];
    if (key === 'timeout') {
      out.timeout = clampTimeout(value, clock, where) ?? defaultTimeout(schema, clock);
      withSignal(out, clock);
      continue;
    }
    if (value === undefined) continue;
    out[key] = checkValue(value, check, clock, `${where}: option "${key}"`);
  }
  return out;
}

/** Puppeteer's waits take `signal` (and its other methods ignore it): the call's own, never a script's object. */
function withSignal(out: Record<string, unknown>, clock: Clock): Record<string, unknown> {
  const signal = clock.signal?.();
  if (signal !== undefined) out.signal = signal;
  return out;
}

function checkValue(value: unknown, check: Check, clock: Clock, where: string): unknown {
  if (typeof check === 'function') return check(value, where);
  if (Array.isArray(check)) {
    if (typeof value === 'string' && check.includes(value)) return value;
    if (Array.isArray(value) && value.every((x) => typeof x === 'string' && check.includes(x))) return [...value];
    throw new MembraneError(`${where} must be one of ${check.join(', ')}`);
  }
  switch (check) {
    case 'string':
      if (typeof value !== 'string') throw new MembraneError(`${where} must be a string`);
      return value;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new MembraneError(`${where} must be a number`);
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') throw new MembraneError(`${where} must be true or false`);
      return value;
    case 'timeout':
      return clampTimeout(value, clock, where);
    case 'stringArray':
      if (!Array.isArray(value) || !value.every((x) => typeof x === 'string'))
        throw new MembraneError(`${where} must be an array of strings`);
      return [...value];
    case 'record':
      return stringRecord(value, where);
  }
  throw new MembraneError(`${where} is not supported`);
}

export function stringRecord(value: unknown, where: string): Record<string, string> {
  if (!isPlainObject(value)) throw new MembraneError(`${where} must be an object of strings`);
  for (const [k, x] of Object.entries(value)) {
    if (typeof x !== 'string') throw new MembraneError(`${where}: "${k}" must be a string`);
  }
  return Object.fromEntries(Object.entries(value)) as Record<string, string>;
}

export function str(v: unknown, where: string): string {
  if (typeof v !== 'string') throw new MembraneError(`${where} must be a string`);
  return v;
}

export function num(v: unknown, where: string, min = -1e9, max = 1e9): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw new MembraneError(`${where} must be a number from ${min} to ${max}`);
  }
  return v;
}

export function clampNum(min: number, max: number) {
  return (v: unknown, where: string): number => num(v, where, min, max);
}
