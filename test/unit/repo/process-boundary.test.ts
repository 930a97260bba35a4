// The folders of src/ are the processes (src/README.md): the front (front/),
// a slot process (slot/) and the egress process (egress/), with what they
// share in protocol/ (the messages between them) and common/. Each folder may
// import only what its README allows, type-only imports included, and no
// module imports itself back through others.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SRC = join(ROOT, 'src');

/** What each folder of src/ may import, besides itself. `sandbox` is the top-level sandbox/ (wire format, page table). */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  common: [],
  protocol: ['common'],
  front: ['common', 'protocol'],
  slot: ['common', 'protocol', 'sandbox'],
  egress: ['common', 'protocol'],
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The relative imports of a source file (static, type-only and dynamic), as paths of .ts files. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [
    ...text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'(\.[^']+)'/gm),
    ...text.matchAll(/\bimport\(\s*'(\.[^']+)'\s*\)/g),
  ].map((m) => m[1] as string);
  return specs.filter((s) => s.endsWith('.js')).map((s) => join(dirname(file), s.replace(/\.js$/, '.ts')));
}

/** The folder a file belongs to: the first folder under src/, or `sandbox` for the top-level sandbox/. */
function area(file: string): string {
  const rel = relative(ROOT, file).split(sep);
  return rel[0] === 'src' ? (rel[1] ?? '') : (rel[0] ?? '');
}

const FILES = sources(SRC);

test('every file of src/ lies in one of the process folders', () => {
  assert.deepEqual(
    FILES.filter((f) => !(area(f) in ALLOWED)).map((f) => relative(ROOT, f)),
    [],
  );
});

for (const [folder, allowed] of Object.entries(ALLOWED)) {
  test(`${folder}/ imports only ${allowed.length ? allowed.join(', ') : 'itself'}`, () => {
    const files = FILES.filter((f) => area(f) === folder);
    assert.ok(files.length > 0, `control: src/${folder} has files`);
    const foreign = files.flatMap((f) =>
      imports(f)
        .filter((dep) => area(dep) !== folder && !allowed.includes(area(dep)))
        .map((dep) => `${relative(ROOT, f)} imports ${relative(ROOT, dep)}`),
    );
    assert.deepEqual(foreign, []);
  });
}

test('the check sees a forbidden import (control)', () => {
  const slot = imports(join(SRC, 'slot/main.ts')).map(area);
  assert.ok(slot.includes('protocol'), "control: the slot's main module imports the protocol");
  assert.notEqual(area(join(SRC, 'egress/guard.ts')), 'slot');
});

test('no module imports itself back, directly or through others', () => {
  const graph = new Map(FILES.map((f) => [f, imports(f).filter((d) => d.startsWith(SRC))]));
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const visit = (f: string, path: string[]): void => {
    if (state.get(f) === 'done') return;
    if (state.get(f) === 'open') {
      cycles.push([...path.slice(path.indexOf(f)), f].map((p) => relative(SRC, p)).join(' → '));
      return;
    }
    state.set(f, 'open');
    for (const d of graph.get(f) ?? []) visit(d, [...path, f]);
    state.set(f, 'done');
  };
  for (const f of FILES) visit(f, []);
  assert.deepEqual(cycles, []);
});
