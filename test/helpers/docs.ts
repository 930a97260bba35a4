// The documentation a test ties to the code: README.md and the pages of docs/.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';

const ROOT = new URL('../../', import.meta.url);

/** A file's text, by its path from the repository's root (`docs/api.md`). */
export function readDoc(path: string): string {
  return readFileSync(new URL(path, ROOT), 'utf8');
}

/** README.md and every page of docs/, by path from the repository's root. */
export function docFiles(): string[] {
  const pages = readdirSync(new URL('docs/', ROOT)).filter((f) => f.endsWith('.md'));
  return ['README.md', ...pages.sort().map((f) => `docs/${f}`)];
}

/**
 * The lines under `heading` (a whole line, `## Errors`) up to the next heading of
 * the same or a higher level; headings inside fenced code blocks do not count.
 * Fails when the page has no such heading, or has it twice.
 */
export function docSection(path: string, heading: string): string {
  const level = /^#+/.exec(heading)?.[0].length ?? 0;
  assert.ok(level > 0, `not a heading: ${heading}`);
  const lines = readDoc(path).split('\n');
  let fenced = false;
  let start = -1;
  let end = lines.length;
  for (const [i, line] of lines.entries()) {
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) continue;
    if (line === heading) {
      assert.equal(start, -1, `${path} has "${heading}" twice`);
      start = i + 1;
      continue;
    }
    const m = /^(#+) /.exec(line);
    if (start >= 0 && end === lines.length && m && (m[1] as string).length <= level) end = i;
  }
  assert.ok(start >= 0, `${path} has no section "${heading}"`);
  return lines.slice(start, end).join('\n');
}
