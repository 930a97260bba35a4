// Every relative link in README.md and docs/*.md names a file that exists and,
// with a #fragment, a heading of that file (GitHub's anchors).
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { posix } from 'node:path';
import { test } from 'node:test';
import { docFiles, readDoc } from '../../helpers/docs.js';

const ROOT = new URL('../../../', import.meta.url);

/** A markdown text without its fenced code blocks and inline code spans. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, title] of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = (title as string)
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

function links(text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string);
}

test("GitHub's anchors: punctuation dropped, repeats numbered", () => {
  assert.deepEqual(
    [...anchors("# A request's path\n## Budgets: what one request may take\n## Keys\n## Keys\n")],
    ['a-requests-path', 'budgets-what-one-request-may-take', 'keys', 'keys-1'],
  );
});

test('every relative link in README.md and docs/*.md points at a file and heading that exist', () => {
  const files = docFiles();
  assert.ok(files.length > 5, files.join(' '));
  let checked = 0;
  for (const file of files) {
    for (const link of links(readDoc(file))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:
      const [path = '', fragment] = link.split('#');
      const target = path === '' ? file : posix.normalize(posix.join(posix.dirname(file), path));
      assert.ok(!target.startsWith('..'), `${file}: ${link} leaves the repository`);
      assert.ok(existsSync(new URL(target, ROOT)), `${file}: ${link} names no file`);
      if (fragment !== undefined) {
        assert.ok(statSync(new URL(target, ROOT)).isFile() && target.endsWith('.md'), `${file}: ${link}`);
        assert.ok(anchors(readDoc(target)).has(fragment), `${file}: ${link} names no heading of ${target}`);
      }
      checked++;
    }
  }
  assert.ok(checked > 20, `only ${checked} links checked`);
});
