// Conformance with Puppeteer, measured with cases derived from Puppeteer's own
// page-level tests (test/conformance/cases/, after puppeteer/puppeteer's
// test/src/*.spec.ts, Apache-2.0): each case runs through pagescript and through
// raw Puppeteer on the same Chromium and the same fixture pages, and the answers
// are compared. See test/conformance/README.md.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import puppeteer, { KnownDevices, Locator, PredefinedNetworkConditions, type Browser } from 'puppeteer';
import { FixtureServer } from '../helpers/fixtures.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { ASSETS } from './assets.js';
import { ALL_CASES } from './cases/index.js';
import { KNOWN_DIFFERENCES } from './differences.js';
import { caseId, describeOutcome, runRaw, same, wrap, type Case, type Outcome, type Urls } from './harness.js';
import { coverage, coverageLines } from './upstream.js';

// CONFORMANCE_AREAS=evaluation,page runs those areas only, CONFORMANCE_MATCH=<regexp> the cases whose
// "area: name" it matches (while working on them).
const AREAS = process.env.CONFORMANCE_AREAS?.split(',').filter(Boolean);
const MATCH = process.env.CONFORMANCE_MATCH ? new RegExp(process.env.CONFORMANCE_MATCH) : undefined;
const FILTERED = AREAS !== undefined || MATCH !== undefined;
const ALL: Case[] = ALL_CASES.filter(
  (c) => (AREAS === undefined || AREAS.includes(c.area)) && (MATCH === undefined || MATCH.test(caseId(c))),
);
const SCRIPT_TIMEOUT_MS = 5_000;
const EXECUTABLE = process.env.PUPPETEER_EXECUTABLE_PATH ?? '/usr/lib/chromium/chromium';

const main = new FixtureServer(ASSETS);
const cross = new FixtureServer(ASSETS);
let svc: TestService;
let browser: Browser;
let urls: Urls;

before(async () => {
  await Promise.all([main.start(), cross.start()]);
  urls = { PREFIX: main.url(''), CROSS_PROCESS_PREFIX: cross.url(''), EMPTY_PAGE: main.url('/empty.html') };
  svc = await startTestService({
    EGRESS_ALLOWLIST: `${main.allowEntry},${cross.allowEntry}`,
    SCRIPT_TIMEOUT_MS: String(SCRIPT_TIMEOUT_MS),
    MAX_RESULT_BYTES: String(16 * 1024 * 1024),
  });
  browser = await puppeteer.launch({
    executablePath: EXECUTABLE,
    pipe: true,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--mute-audio',
      '--hide-scrollbars',
      // The fixtures are on loopback: Local Network Access would block a data: page's
      // subresource from 127.0.0.1, which a public site's page (what users run) never meets.
      '--disable-features=LocalNetworkAccessChecks',
    ],
  });
});

after(async () => {
  await browser?.close();
  await svc?.close();
  await Promise.all([main.close(), cross.close()]);
});

async function throughService(c: Case): Promise<Outcome> {
  const r = await svc.post({ url: urls.PREFIX + (c.path ?? '/empty.html'), script: wrap(c, urls) });
  if (r.status === 200) return r.body.data as Outcome;
  return { ok: false, name: String(r.body.code), message: String(r.body.error) };
}

function throughPuppeteer(c: Case): Promise<Outcome> {
  return runRaw(browser, c, urls, SCRIPT_TIMEOUT_MS, { KnownDevices, Locator, PredefinedNetworkConditions });
}

// A case whose two answers differ (and is not a listed difference) runs again, up to RETRIES times, the two sides
// one after the other: some of Puppeteer's tests race the page against a 40 ms timer or a wait task's first poll,
// and on a loaded machine either side can lose such a race. Puppeteer's own CI retries a failed test 3 times
// (.mocharc.cjs). A case that agrees only on a retry is counted as the same and named in the diagnostics; one that
// differs every time fails the test.
const RETRIES = 3;

async function bothSides(c: Case, atOnce: boolean): Promise<[Outcome, Outcome]> {
  if (atOnce) return Promise.all([throughService(c), throughPuppeteer(c)]);
  const ours = await throughService(c);
  return [ours, await throughPuppeteer(c)];
}

test(`pagescript gives Puppeteer's answer (${ALL.length} cases from Puppeteer's page-level tests)`, async (t) => {
  const byArea = new Map<string, { total: number; same: number }>();
  const differing = new Map<string, string>();
  const agreedOnRetry: string[] = [];
  for (const c of ALL) {
    let [ours, theirs] = await bothSides(c, true);
    if (!same(ours, theirs) && !(caseId(c) in KNOWN_DIFFERENCES)) {
      const first = `pagescript: ${describeOutcome(ours)} | Puppeteer: ${describeOutcome(theirs)}`;
      for (let retry = 1; retry <= RETRIES && !same(ours, theirs); retry++) {
        [ours, theirs] = await bothSides(c, false);
        if (same(ours, theirs)) agreedOnRetry.push(`${caseId(c)} (retry ${retry}; first ${first})`);
      }
    }
    const a = byArea.get(c.area) ?? { total: 0, same: 0 };
    a.total++;
    // CONFORMANCE_VERBOSE=1 prints every case's two answers.
    if (process.env.CONFORMANCE_VERBOSE) {
      t.diagnostic(`${caseId(c)}: ${describeOutcome(ours)} | ${describeOutcome(theirs)}`);
      // As it goes too (diagnostics print at the end): a long run stopped early still tells what it saw.
      process.stderr.write(
        `${same(ours, theirs) ? 'same' : 'DIFFERS'} ${caseId(c)}: ${describeOutcome(ours)} | ${describeOutcome(theirs)}\n`,
      );
    }
    if (same(ours, theirs)) a.same++;
    else differing.set(caseId(c), `pagescript: ${describeOutcome(ours)}\n    Puppeteer:  ${describeOutcome(theirs)}`);
    byArea.set(c.area, a);
  }
  let total = 0;
  let agreeing = 0;
  for (const [area, a] of [...byArea].sort()) {
    total += a.total;
    agreeing += a.same;
    t.diagnostic(`${area}: ${a.same}/${a.total} the same`);
  }
  t.diagnostic(`all: ${agreeing}/${total} the same (${((100 * agreeing) / total).toFixed(1)}%)`);
  // How much of Puppeteer's own tests the cases cover (test/conformance/upstream/), whatever ran.
  for (const line of coverageLines(coverage(ALL_CASES))) t.diagnostic(line);

  for (const id of agreedOnRetry) t.diagnostic(`the same only on a retry: ${id}`);
  for (const [id, d] of differing) t.diagnostic(`differs: ${id}\n    ${d}`);
  const unexpected = [...differing].filter(([id]) => !(id in KNOWN_DIFFERENCES));
  const ran = new Set(ALL.map(caseId));
  const fixed = Object.keys(KNOWN_DIFFERENCES).filter((id) => ran.has(id) && !differing.has(id));
  const unknownIds = !FILTERED ? Object.keys(KNOWN_DIFFERENCES).filter((id) => !ran.has(id)) : [];
  assert.deepEqual(unknownIds, [], 'test/conformance/differences.ts names cases that do not exist');
  assert.equal(
    unexpected.length,
    0,
    `cases that differ from Puppeteer and are not in test/conformance/differences.ts:\n${unexpected
      .map(([id, d]) => `  ${id}\n    ${d}`)
      .join('\n')}`,
  );
  assert.deepEqual(
    fixed,
    [],
    "cases listed in test/conformance/differences.ts now give Puppeteer's answer: remove them",
  );
});
