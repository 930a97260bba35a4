// The request's handle table: every Puppeteer object the script may use, kept
// here under an id (the isolate holds only ids), bounded in count and in
// characters; and the values that cross with it: host values encoded as JSON
// (objects become handle tags) and the script's arguments for the page decoded.
import type { Frame, Page } from 'puppeteer';
import { ElementHandle, JSHandle, Locator } from 'puppeteer';
import type { HandleKind, WireHandle } from '../../../sandbox/wire.js';
import { snapshotNames } from '../../../sandbox/page-api.js';
import { bigIntText, errorName, isTagged, numberOf } from '../../../sandbox/wire.js';
import { HANDLE_CHARS, MAX_HANDLE_CHARS } from './budgets.js';
import { MembraneError } from './options.js';
import { cleanMessage, cleanStack, encodePrimitive } from './wire-errors.js';

/** The characters of the strings in a handle's snapshot (its text, URL, headers, stack frames). */
function stringChars(v: unknown, depth = 0): number {
  if (typeof v === 'string') return v.length;
  if (typeof v !== 'object' || v === null || depth > 8) return 0;
  let n = 0;
  for (const [k, x] of Object.entries(v)) n += k.length + stringChars(x, depth + 1);
  return n;
}

export class HandleTable {
  readonly #page: Page;
  readonly #maxHandles: number;
  readonly #objects = new Map<number, { kind: HandleKind; obj: object; chars: number }>();
  readonly #ids = new Map<object, number>();
  #nextId = 1;
  /** Characters of the handle table's data (HANDLE_CHARS a handle and what was copied of it). */
  #handleChars = 0;
  /** While an event is encoded: the handles it registered, unregistered again if it is dropped. */
  #staged: number[] | undefined;

  constructor(page: Page, maxHandles: number) {
    this.#page = page;
    this.#maxHandles = maxHandles;
  }

  /** Handles in the table, and the characters counted for them (MAX_HANDLE_CHARS). */
  get count(): number {
    return this.#objects.size;
  }
  get chars(): number {
    return this.#handleChars;
  }

  /** The object and kind under an id, if the id is in the table. */
  entry(id: number): { kind: HandleKind; obj: object } | undefined {
    return this.#objects.get(id);
  }

  /** The id of an object in the table. */
  idOf(obj: object): number | undefined {
    return this.#ids.get(obj);
  }

  /** Runs work with every handle it registers listed in `into` (an event's, taken out if it is dropped). */
  staging<T>(into: number[], work: () => T): T {
    this.#staged = into;
    try {
      return work();
    } finally {
      this.#staged = undefined;
    }
  }

  register(obj: object, kind: HandleKind, dataChars = 0): number {
    const known = this.#ids.get(obj);
    if (known !== undefined) return known;
    if (this.#objects.size >= this.#maxHandles) {
      throw new MembraneError(`too many handles (at most ${this.#maxHandles}); dispose() the ones you no longer need`);
    }
    // SECURITY: bounded in characters too: what the page puts in a handle (a console line's text) is its to choose.
    const chars = HANDLE_CHARS + dataChars;
    if (this.#handleChars + chars > MAX_HANDLE_CHARS)
      throw new MembraneError(`too much data in handles (at most ${MAX_HANDLE_CHARS} characters)`);
    const id = this.#nextId++;
    this.#objects.set(id, { kind, obj, chars });
    this.#ids.set(obj, id);
    this.#handleChars += chars;
    this.#staged?.push(id);
    return id;
  }

  unregister(id: number): void {
    const entry = this.#objects.get(id);
    if (entry === undefined) return;
    this.#objects.delete(id);
    this.#ids.delete(entry.obj);
    this.#handleChars -= entry.chars;
  }

  #kindOf(v: object): HandleKind | undefined {
    if (v === this.#page) return 'Page';
    if (v instanceof ElementHandle) return 'ElementHandle';
    if (v instanceof JSHandle) return 'JSHandle';
    if (v instanceof Locator) return 'Locator';
    const name = v.constructor?.name ?? '';
    // Puppeteer's concrete classes are CdpFrame, CdpHTTPRequest, …; match the public API name.
    if (/Frame$/.test(name) && typeof (v as Frame).childFrames === 'function') return 'Frame';
    if (/HTTPRequest$/.test(name)) return 'HTTPRequest';
    if (/HTTPResponse$/.test(name)) return 'HTTPResponse';
    if (/Dialog$/.test(name)) return 'Dialog';
    if (/ConsoleMessage$/.test(name)) return 'ConsoleMessage';
    // CdpTouchHandle: a touch held on the request's page (touchscreen.touchStart, elementHandle.touchStart).
    if (/TouchHandle$/.test(name) && typeof (v as { move?: unknown }).move === 'function') return 'TouchHandle';
    return undefined;
  }

  /** The values sandbox/page-api.ts marks 'snapshot' for this kind, read now: the isolate answers them without a call. */
  #snapshot(kind: HandleKind, v: object): Record<string, unknown> | undefined {
    const names = snapshotNames(kind);
    if (names.length === 0) return undefined;
    // Our own table's names, called on a Puppeteer object: never a name from the script.
    const getters = v as Record<string, () => unknown>;
    return Object.fromEntries(names.map((name) => [name, getters[name]?.call(v)]));
  }

  /** Host value → JSON-ready value; Puppeteer objects become handle tags. */
  encode(v: unknown, depth = 0): unknown {
    if (typeof v !== 'object' || v === null) return encodePrimitive(v);
    if (depth > 64) throw new MembraneError('value is nested too deeply');
    if (v instanceof Error) {
      // The pageerror event's Error (made by Puppeteer from the page's exception).
      const m = cleanMessage(v);
      return { $ps: 'e', n: errorName(v.name), m, s: cleanStack(v, m) };
    }
    if (v instanceof Uint8Array)
      return { $ps: 'b', d: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') };
    if (v instanceof Map)
      return { $ps: 'm', e: [...v.entries()].map(([k, x]) => [this.encode(k, depth + 1), this.encode(x, depth + 1)]) };
    if (Array.isArray(v)) return v.map((x) => this.encode(x, depth + 1));
    const kind = this.#kindOf(v);
    if (kind !== undefined) {
      const s = this.#snapshot(kind, v);
      const tag: WireHandle = { $ps: 'h', id: this.register(v, kind, s ? stringChars(s) : 0), k: kind };
      if (s) tag.s = s;
      return tag;
    }
    // fromEntries defines own properties: a "__proto__" key stays data.
    const plain = Object.fromEntries(
      Object.entries(v)
        .filter(([, x]) => x !== undefined)
        .map(([k, x]) => [k, this.encode(x, depth + 1)]),
    );
    // SECURITY: page data shaped like a tag ({"$ps": "h", …}) is wrapped, so the
    // isolate reads it as data and never as a handle, bytes or undefined.
    return Object.hasOwn(plain, '$ps') ? { $ps: 'o', v: plain } : plain;
  }

  pageArgs(list: readonly unknown[], where: string): unknown[] {
    return list.map((a) => this.pageArg(a, where, 0));
  }

  /** One argument for the page at a depth (1: a value an exposed function gives back to the page). */
  pageArg(a: unknown, where: string, depth: number): unknown {
    if (typeof a !== 'object' || a === null) return a;
    if (depth > 64) throw new MembraneError(`${where}: argument is nested too deeply`);
    if (isTagged(a)) {
      switch (a.$ps) {
        case 'u':
          return undefined;
        case 'n':
          return numberOf(a.v);
        case 'i': {
          const text = bigIntText(a.v);
          if (text === undefined) throw new MembraneError(`${where}: malformed BigInt`);
          return BigInt(text);
        }
        case 'o': {
          // The script's own data with a "$ps" key: data, never a tag.
          const inner: unknown = a.v;
          if (typeof inner !== 'object' || inner === null || Array.isArray(inner))
            throw new MembraneError(`${where}: malformed value`);
          return Object.fromEntries(Object.entries(inner).map(([k, x]) => [k, this.pageArg(x, where, depth + 1)]));
        }
        case 'b':
          return [...Buffer.from(String(a.d), 'base64')];
        case 'h':
          // Puppeteer accepts handles only as whole arguments, as here.
          if (depth > 0) throw new MembraneError(`${where}: handles can only be passed as whole arguments`);
          return this.handle(a, ['ElementHandle', 'JSHandle'], where);
        case 'f':
          throw new MembraneError(`${where}: functions cannot be passed as arguments to the page`);
      }
    }
    if (Array.isArray(a)) return a.map((x) => this.pageArg(x, where, depth + 1));
    return Object.fromEntries(Object.entries(a).map(([k, x]) => [k, this.pageArg(x, where, depth + 1)]));
  }

  handle<T>(v: unknown, kinds: readonly HandleKind[], where: string): T {
    const id = isTagged(v) && v.$ps === 'h' ? v.id : undefined;
    const entry = typeof id === 'number' ? this.#objects.get(id) : undefined;
    // SECURITY: the kind is the table's, never the one the isolate claims.
    if (!entry || !kinds.includes(entry.kind)) throw new MembraneError(`${where}: expected ${kinds.join(' or ')}`);
    return entry.obj as T;
  }

  clear(): void {
    this.#objects.clear();
    this.#ids.clear();
    this.#handleChars = 0;
  }
}
