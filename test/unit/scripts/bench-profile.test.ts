// npm run bench -- --profile: self time per function from a .cpuprofile, the
// ten functions with the most of it, and the files the service's processes
// write, found by the folder each is told to write in.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseArgs } from '../../../scripts/bench/args.js';
import { type CpuProfile, readProfiles, selfTimes, shortUrl } from '../../../scripts/bench/profile.js';

const frame = (functionName: string, url = 'file:///srv/app/dist/slot.js', lineNumber = 9) => ({
  functionName,
  url,
  lineNumber,
  scriptId: '1',
  columnNumber: 0,
});

/** root → idle, parse (line 10), send (line 20); a second node of `parse` (another caller) on the same line. */
const PROFILE: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)', '', -1) },
    { id: 2, callFrame: frame('(idle)', '', -1) },
    { id: 3, callFrame: frame('parse') },
    { id: 4, callFrame: frame('send', 'file:///srv/app/dist/slot.js', 19) },
    { id: 5, callFrame: frame('parse') },
    { id: 6, callFrame: frame('', 'file:///srv/app/node_modules/puppeteer-core/lib/x.js', 0) },
  ],
  startTime: 1_000_000,
  // Samples at +1000, +2000, +4000, +7000, +8000, +8500 µs; the profile ends at +10000.
  samples: [3, 4, 5, 2, 6, 3],
  timeDeltas: [1000, 1000, 2000, 3000, 1000, 500],
  endTime: 1_010_000,
};

test('self time is each sample until the next, summed per function (name, file and line), idle left out', () => {
  const times = selfTimes(PROFILE);
  // parse: 1000 (id 3) + 3000 (id 5) + 1500 (the last sample, until endTime); send 2000; the anonymous one 500.
  assert.deepEqual(
    times.map((f) => [f.name, f.line, f.selfMs]),
    [
      ['parse', 10, 5.5],
      ['send', 20, 2],
      ['(anonymous)', 1, 0.5],
    ],
  );
  assert.deepEqual(
    times.map((f) => f.percent),
    [68.8, 25, 6.3],
  );
});

test('two functions of one name in different places are counted apart', () => {
  const p: CpuProfile = {
    ...PROFILE,
    nodes: PROFILE.nodes.map((n) =>
      n.id === 5 ? { ...n, callFrame: frame('parse', 'file:///srv/app/dist/x.js') } : n,
    ),
  };
  assert.deepEqual(
    selfTimes(p)
      .filter((f) => f.name === 'parse')
      .map((f) => [f.url, f.selfMs]),
    [
      ['file:///srv/app/dist/x.js', 3],
      ['file:///srv/app/dist/slot.js', 2.5],
    ],
  );
});

test("a profile without samples spreads its length over the nodes' hit counts", () => {
  const { samples: _s, timeDeltas: _t, ...rest } = PROFILE;
  const p: CpuProfile = {
    ...rest,
    nodes: rest.nodes.map((n) => ({ ...n, hitCount: n.id === 3 ? 3 : n.id === 4 ? 1 : 0 })),
  };
  assert.deepEqual(
    selfTimes(p).map((f) => [f.name, f.selfMs]),
    [
      ['parse', 7.5],
      ['send', 2.5],
    ],
  );
});

test("each profiled process's file is read from its folder, with its pid and no more than ten functions", (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-profile-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const many: CpuProfile = {
    nodes: Array.from({ length: 12 }, (_, i) => ({ id: i + 1, callFrame: frame(`f${i}`) })),
    startTime: 0,
    samples: Array.from({ length: 12 }, (_, i) => i + 1),
    timeDeltas: Array.from({ length: 12 }, () => 1000),
    endTime: 14_000,
  };
  mkdirSync(join(dir, 'egress'));
  writeFileSync(join(dir, 'egress', 'CPU.20260101.101010.4242.0.001.cpuprofile'), JSON.stringify(many));
  mkdirSync(join(dir, 'slot-0'));
  writeFileSync(join(dir, 'slot-0', 'CPU.20260101.101010.77.0.001.cpuprofile'), JSON.stringify(PROFILE));
  writeFileSync(join(dir, 'slot-0', 'notes.txt'), 'not a profile');
  const read = readProfiles(dir);
  assert.deepEqual(
    read.map((p) => [p.process, p.pid, p.top.length, p.busyMs]),
    [
      ['egress', 4242, 10, 13],
      ['slot-0', 77, 3, 8],
    ],
  );
  // The last sample lasts until the end: 2000 µs.
  assert.equal(read[0]?.top[0]?.name, 'f11');
});

test('a script is named under the repository or from node_modules on', () => {
  assert.equal(shortUrl('file:///srv/app/dist/slot.js', '/srv/app'), 'dist/slot.js');
  assert.equal(
    shortUrl('file:///srv/app/node_modules/.pnpm/undici/node_modules/undici/lib/a.js', '/srv/app'),
    'node_modules/undici/lib/a.js',
  );
  assert.equal(shortUrl('node:internal/streams/readable', '/srv/app'), 'node:internal/streams/readable');
});

test('--profile is a flag of the default run, not taken for the output file', () => {
  assert.deepEqual(parseArgs(['--profile', 'out.json', '--chromium', 'shell']), {
    run: { kind: 'compare' },
    modes: ['shell'],
    profile: true,
    outFile: 'out.json',
  });
  assert.equal(parseArgs([]).profile, false);
  assert.throws(() => parseArgs(['--neighbour', '--profile']), /--profile goes with the default run only/);
});
