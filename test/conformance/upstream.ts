// Puppeteer's own tests, as pinned in upstream/<area>.json (each names the commit
// of puppeteer/puppeteer its titles were read from), and how our cases cover them:
// every upstream test is translated by a case, or listed in untranslated.ts with
// its reason. No Chromium here: test/unit/repo/conformance-upstream.test.ts checks it.
import { readdirSync, readFileSync } from 'node:fs';
import { caseId, type Case } from './harness.js';
import { UNTRANSLATED } from './untranslated.js';

const DIR = new URL('./upstream/', import.meta.url);

/** One pinned spec file of puppeteer/puppeteer. */
export interface UpstreamFile {
  readonly area: string;
  readonly repository: string;
  readonly path: string;
  readonly commit: string;
  readonly note: string;
  /** [describe path, it title]: the describe path starts with the file's top-level describe. */
  readonly tests: ReadonlyArray<readonly [readonly string[], string]>;
}

/** The pinned files, by area. */
export function upstreamFiles(): UpstreamFile[] {
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(new URL(f, DIR), 'utf8')) as UpstreamFile);
}

/**
 * A test's id: "area: describe… title", the file's top-level describe left out
 * ("locator: Locator.click should work"), as our cases are named.
 */
export function upstreamId(area: string, [describes, title]: readonly [readonly string[], string]): string {
  return `${area}: ${[...describes.slice(1), title].join(' ')}`;
}

/** Every upstream test id of the pinned files (a title Puppeteer repeats in one describe counts once). */
export function upstreamIds(files = upstreamFiles()): Map<string, string[]> {
  const byArea = new Map<string, string[]>();
  for (const f of files) byArea.set(f.area, [...new Set(f.tests.map((t) => upstreamId(f.area, t)))]);
  return byArea;
}

/** The upstream tests a case translates: its `upstream` field, else its own id. */
export function translates(c: Case): string[] {
  if (c.upstream === undefined) return [caseId(c)];
  return typeof c.upstream === 'string' ? [c.upstream] : [...c.upstream];
}

export interface AreaCoverage {
  readonly area: string;
  readonly total: number;
  readonly translated: number;
  /** Listed in untranslated.ts as not translatable, by reason (not-yet excluded). */
  readonly cannot: number;
  /** Listed as translatable but not translated yet. */
  readonly notYet: number;
  /** Neither translated nor listed: the check fails on these. */
  readonly missing: string[];
}

/** Per area: how many upstream tests our cases translate, and what is left. */
export function coverage(cases: readonly Case[], files = upstreamFiles()): AreaCoverage[] {
  const done = new Set(cases.flatMap(translates));
  return [...upstreamIds(files)].map(([area, ids]) => {
    const translated = ids.filter((id) => done.has(id));
    const rest = ids.filter((id) => !done.has(id));
    const listed = rest.filter((id) => id in UNTRANSLATED);
    const notYet = listed.filter((id) => UNTRANSLATED[id]?.reason === 'not-yet');
    return {
      area,
      total: ids.length,
      translated: translated.length,
      cannot: listed.length - notYet.length,
      notYet: notYet.length,
      missing: rest.filter((id) => !(id in UNTRANSLATED)),
    };
  });
}

/** "page: 80/143 translated (40 cannot be, 23 not yet)" lines, and the overall one. */
export function coverageLines(areas: readonly AreaCoverage[]): string[] {
  const sum = (k: 'total' | 'translated' | 'cannot' | 'notYet'): number => areas.reduce((n, a) => n + a[k], 0);
  const line = (name: string, t: number, total: number, cannot: number, notYet: number): string =>
    `${name}: ${t}/${total} upstream tests translated (${cannot} cannot be, ${notYet} not yet)`;
  return [
    ...areas.map((a) => line(a.area, a.translated, a.total, a.cannot, a.notYet)),
    line('all', sum('translated'), sum('total'), sum('cannot'), sum('notYet')),
  ];
}
