// The executor's code (src/executor.ts and everything it reaches) imports
// nothing of the front: no HTTP, no tenancy (keys, limits), no metrics or
// OpenAPI, no app, service or supervisor. Followed through every import, so
// that a shared module cannot carry the front in.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');
const FRONT = /^(http|tenancy)\/|^(app|service|supervisor|egress-supervisor|server|metrics|openapi)\.ts$/;

/** The relative imports of a source file, as paths of .ts files. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^\s*(?:import|export)\b[^'"]*from\s+'(\.[^']+)'/gm)].map((m) =>
    join(dirname(file), (m[1] as string).replace(/\.js$/, '.ts')),
  );
}

function reach(entry: string): Map<string, string> {
  const seen = new Map<string, string>([[entry, '(entry)']]);
  const todo = [entry];
  for (let file = todo.pop(); file !== undefined; file = todo.pop()) {
    for (const dep of imports(file)) {
      if (seen.has(dep) || !dep.startsWith(SRC)) continue;
      seen.set(dep, relative(SRC, file));
      todo.push(dep);
    }
  }
  return seen;
}

test('the executor reaches no module of the front, directly or through another', () => {
  const reached = reach(join(SRC, 'executor.ts'));
  assert.ok(reached.has(join(SRC, 'scrape/job.ts')), 'control: the job is reached');
  assert.ok(reached.has(join(SRC, 'egress/remote.ts')), "control: the guard's client is reached");
  assert.ok(!reached.has(join(SRC, 'egress-process.ts')), "the egress process is not the executor's");
  const front = [...reached].filter(([f]) => FRONT.test(relative(SRC, f)));
  assert.deepEqual(
    front.map(([f, by]) => `${relative(SRC, f)} (imported by ${by})`),
    [],
  );
});

test('the front reaches no module of the executor but the messages', () => {
  const reached = reach(join(SRC, 'server.ts'));
  assert.ok(reached.has(join(SRC, 'http/scrape-route.ts')), 'control: the scrape route is reached');
  const executor = [...reached].filter(([f]) =>
    /^(browser|egress|sandbox|scrape)\/|^(executor|egress-process)\.ts$/.test(relative(SRC, f)),
  );
  assert.deepEqual(
    executor.map(([f, by]) => `${relative(SRC, f)} (imported by ${by})`),
    [],
  );
});

test('the egress process reaches no module of the front, nor the browser, the sandbox or the job', () => {
  const reached = reach(join(SRC, 'egress-process.ts'));
  assert.ok(reached.has(join(SRC, 'egress/guard.ts')), 'control: the guard is reached');
  const foreign = [...reached].filter(([f]) => {
    const rel = relative(SRC, f);
    return FRONT.test(rel) || /^(browser|sandbox|scrape)\/|^executor\.ts$/.test(rel);
  });
  assert.deepEqual(
    foreign.map(([f, by]) => `${relative(SRC, f)} (imported by ${by})`),
    [],
  );
});
