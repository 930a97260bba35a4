// No code of src/ reads a Node (or a library's) object's private fields: a field of
// theirs may keep its name and change its meaning, and a bound built on it then goes
// silently. And no process speaks Node's IPC to another: every wire is ours
// (src/protocol/wire.ts). Each exception left is listed here with why.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Each line of code of src/ (comments left out), with its file (relative to src/) and number. */
function codeLines(): Array<{ file: string; n: number; text: string }> {
  return sources(SRC).flatMap((path) =>
    readFileSync(path, 'utf8')
      .split('\n')
      // A block comment's own lines go; code after an inline `/* ... */` is read.
      .map((text, i) => ({
        file: relative(SRC, path),
        n: i + 1,
        text: text.replace(/\/\*.*?\*\//g, '').replace(/\/\/.*$/, ''),
      }))
      .filter(({ text }) => !/^\s*(\*|\/\*)/.test(text)),
  );
}

const PRIVATE: ReadonlyArray<readonly [string, RegExp]> = [
  // Node's private symbols are reached only by listing an object's keys, or by a description.
  [
    'a symbol looked up by its description',
    /getOwnPropertySymbols|Reflect\.ownKeys|getOwnPropertyDescriptors|Symbol\.(for|keyFor)\(|\.description\s*(?:[=!]==?|\??\.\w+\()/,
  ],
  ['an underscore field', /\.\s*_[A-Za-z]\w*|\[\s*['"`]_[A-Za-z]\w*['"`]\s*\]/],
  ["Node's IPC channel", /process\.channel\b/],
  ["a Node socket's undocumented method", /\bdestroySoon\b/],
];

/** The exceptions left: file → what it may read, and why. */
const EXCEPTIONS: Record<string, { readonly match: RegExp; readonly why: string }> = {
  'front/http/reply.ts': {
    match: /destroySoon|\._handle\b/,
    why:
      "a lingering close (an early reply's connection kept half-open LINGER_MS): Node ends a `Connection: close` " +
      "reply through the socket's destroySoon(), and its HTTP parser reads the socket's handle directly, so only " +
      "the handle's readStop() stops it reading the rest of a body; no public API does either",
  },
  'front/http/edge.ts': {
    match: /destroySoon/,
    why: "a 408 or 400 written on a socket Node's HTTP server gave up on, closed once flushed (no public equivalent)",
  },
  'slot/membrane/methods/keyboard.ts': {
    match: /_modifiers/,
    why:
      'the keys Puppeteer holds down, which it sends with every key event: the clipboard guard judges a key ' +
      'with them; where Puppeteer no longer keeps them, every modifier counts as held (refused, never guessed)',
  },
};

test("no code of src/ reads a Node or library object's private fields, but the exceptions listed with why", () => {
  const found: string[] = [];
  for (const { file, n, text } of codeLines())
    for (const [what, pattern] of PRIVATE) {
      if (!pattern.test(text)) continue;
      const exception = EXCEPTIONS[file];
      if (exception?.match.test(text)) continue;
      found.push(`${file}:${n}: ${what}: ${text.trim()}`);
    }
  assert.deepEqual(found, [], 'read through a documented API, or list the exception with why');
});

test('every exception listed is still there (one gone is taken off the list)', () => {
  const lines = codeLines();
  for (const [file, { match, why }] of Object.entries(EXCEPTIONS)) {
    assert.ok(why.length > 40, `${file}: say why`);
    assert.ok(
      lines.some((l) => l.file === file && match.test(l.text) && PRIVATE.some(([, p]) => p.test(l.text))),
      `${file} no longer reads ${String(match)}: take it off the list`,
    );
  }
});

test("no process speaks Node's IPC to another: every wire is the service's own (wire.ts)", () => {
  const ipc =
    /process\.send\b|process\.on\(\s*['"](message|disconnect)['"]|serialization\s*:|['"]ipc['"]|\bfork\(|\.send\([^)]*keepOpen|process\.connected\b/;
  const found = codeLines()
    .filter(({ text }) => ipc.test(text))
    .map(({ file, n, text }) => `${file}:${n}: ${text.trim()}`);
  assert.deepEqual(found, []);
});

test('the scan sees what it looks for (a scan that finds nothing anywhere would pass for nothing)', () => {
  const text = "const h = (s as any)._handle; Object.getOwnPropertySymbols(c).find((s) => s.description === 'k');";
  assert.ok(PRIVATE[0]?.[1].test(text));
  assert.ok(PRIVATE[1]?.[1].test(text));
  assert.ok(!PRIVATE[1]?.[1].test('const { time: _time, pid: _pid } = parsed;'), 'a local named with _ is no field');
  for (const other of [
    'Reflect.ownKeys(socket).find((k) => String(k) === "Symbol(kHandle)")',
    "syms.find((s) => s.description?.includes('kChannel'))",
    "syms.find((s) => s.description == 'kChannel')",
  ])
    assert.ok(PRIVATE[0]?.[1].test(other), other);
  assert.ok(!PRIVATE[0]?.[1].test('md(schema.description)'), "an OpenAPI document's description is no symbol");
  assert.ok(PRIVATE[1]?.[1].test('child[`_handle`].readStop()'));
  assert.ok(codeLines().length > 10_000, 'src/ is read');
  const inline = '/* read */ const h = socket._handle;';
  assert.ok(PRIVATE[1]?.[1].test(inline.replace(/\/\*.*?\*\//g, '')), 'code after an inline comment is read');
});
