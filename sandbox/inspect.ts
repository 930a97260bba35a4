// console.log formatting inside the isolate, close to Node's util.format and
// util.inspect for the values scripts log: strings, numbers, arrays, plain
// objects, errors, dates, maps and sets. Bounded in depth, width and length so
// that logging a huge or cyclic value costs little.

const MAX_DEPTH = 2;
const MAX_ITEMS = 100;
const MAX_STRING = 10_000;

function quote(s: string): string {
  const body = s.slice(0, MAX_STRING);
  const more = s.length > MAX_STRING ? `... ${s.length - MAX_STRING} more characters` : '';
  // As Node: single quotes, unless the text has some and no double quotes (then double), or has both (backticks).
  const q = !body.includes("'") ? "'" : !body.includes('"') ? '"' : !body.includes('`') ? '`' : "'";
  const escaped = body.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
  return `${q}${escaped.replaceAll(q, `\\${q}`)}${q}${more}`;
}

function isIdentifier(k: string): boolean {
  return /^[A-Za-z_$][\w$]*$/.test(k);
}

function className(v: object): string {
  const proto = Object.getPrototypeOf(v) as { constructor?: { name?: unknown } } | null;
  if (proto === null) return '[Object: null prototype]';
  const name = proto.constructor?.name;
  return typeof name === 'string' ? name : 'Object';
}

export function inspect(v: unknown, depth = 0, seen: unknown[] = []): string {
  switch (typeof v) {
    case 'string':
      return depth === 0 ? v : quote(v);
    case 'number':
      return Object.is(v, -0) ? '-0' : String(v);
    case 'bigint':
      return `${v}n`;
    case 'boolean':
    case 'undefined':
      return String(v);
    case 'symbol':
      return v.toString();
    case 'function':
      return `[${v.name ? `Function: ${v.name}` : 'Function (anonymous)'}]`;
  }
  if (v === null) return 'null';
  const obj = v as object;
  if (seen.includes(obj)) return '[Circular *1]';
  if (obj instanceof Error)
    return obj.stack && obj.stack.startsWith(`${obj.name}`) ? obj.stack : `${obj.name}: ${obj.message}`;
  if (obj instanceof Date) return Number.isNaN(obj.getTime()) ? 'Invalid Date' : obj.toISOString();
  if (obj instanceof RegExp) return obj.toString();
  const custom = (obj as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag];
  if (typeof (obj as { __psInspect?: unknown }).__psInspect === 'function') {
    return (obj as { __psInspect: () => string }).__psInspect();
  }
  if (depth > MAX_DEPTH) return Array.isArray(obj) ? '[Array]' : `[${className(obj)}]`;
  const inner = [...seen, obj];
  const parts: string[] = [];
  let open = '{';
  let close = '}';
  let prefix = '';
  if (Array.isArray(obj)) {
    open = '[';
    close = ']';
    const n = Math.min(obj.length, MAX_ITEMS);
    for (let i = 0; i < n; i++) parts.push(inspect(obj[i], depth + 1, inner));
    if (obj.length > MAX_ITEMS) parts.push(`... ${obj.length - MAX_ITEMS} more items`);
  } else if (obj instanceof Map) {
    prefix = `Map(${obj.size}) `;
    let i = 0;
    for (const [k, val] of obj) {
      if (i++ >= MAX_ITEMS) break;
      parts.push(`${inspect(k, depth + 1, inner)} => ${inspect(val, depth + 1, inner)}`);
    }
  } else if (obj instanceof Set) {
    prefix = `Set(${obj.size}) `;
    let i = 0;
    for (const val of obj) {
      if (i++ >= MAX_ITEMS) break;
      parts.push(inspect(val, depth + 1, inner));
    }
  } else if (ArrayBuffer.isView(obj)) {
    const arr = obj as unknown as ArrayLike<number>;
    prefix = `${className(obj)}(${arr.length}) `;
    open = '[';
    close = ']';
    for (let i = 0; i < Math.min(arr.length, MAX_ITEMS); i++) parts.push(String(arr[i]));
    if (arr.length > MAX_ITEMS) parts.push(`... ${arr.length - MAX_ITEMS} more items`);
  } else {
    const name = className(obj);
    if (name !== 'Object') prefix = `${name} `;
    else if (typeof custom === 'string') prefix = `Object [${custom}] `;
    const keys = Object.keys(obj);
    for (const k of keys.slice(0, MAX_ITEMS)) {
      const val = (obj as Record<string, unknown>)[k];
      parts.push(`${isIdentifier(k) ? k : quote(k)}: ${inspect(val, depth + 1, inner)}`);
    }
    if (keys.length > MAX_ITEMS) parts.push(`... ${keys.length - MAX_ITEMS} more items`);
  }
  if (parts.length === 0) return `${prefix}${open}${close}`;
  const oneLine = `${prefix}${open} ${parts.join(', ')} ${close}`;
  if (oneLine.length <= 72) return oneLine;
  const pad = '  '.repeat(depth + 1);
  return `${prefix}${open}\n${pad}${parts.join(`,\n${pad}`)}\n${'  '.repeat(depth)}${close}`;
}

/** Node's util.format: %s %d %i %f %j %o %O %c %% in the first argument, the rest inspected. */
export function format(args: readonly unknown[]): string {
  if (args.length === 0) return '';
  const first = args[0];
  let rest = 1;
  let head: string;
  if (typeof first === 'string') {
    head = first.replace(/%([sdifjoOc%])/g, (m, f: string) => {
      if (f === '%') return '%';
      if (rest >= args.length) return m;
      const a = args[rest++];
      switch (f) {
        case 's':
          return typeof a === 'string' ? a : typeof a === 'object' && a !== null ? inspect(a, 1) : inspect(a);
        case 'd':
          return typeof a === 'bigint' ? `${a}n` : String(Number(a));
        case 'i':
          return typeof a === 'bigint' ? `${a}n` : String(parseInt(String(a), 10));
        case 'f':
          return String(parseFloat(String(a)));
        case 'j':
          try {
            return JSON.stringify(a) ?? 'undefined';
          } catch {
            return '[Circular]';
          }
        case 'c':
          return '';
        default:
          return inspect(a, 0 + (typeof a === 'string' ? 1 : 0));
      }
    });
  } else {
    head = inspect(first);
  }
  const tail = args.slice(rest).map((a) => inspect(a));
  return [head, ...tail].join(' ');
}
