// The bench's CPU figures: the machine's idle share from /proc/stat and our
// CPU per request against raw Puppeteer's client (issue 45's ≤ 2 ×).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meanCpu, meanIdle, ourCpu, ourCpuOverRawClient } from '../../../scripts/bench/measure.js';
import { idlePercent, parseMachineCpu } from '../../../scripts/bench/proc.js';

const STAT = (user: number, idle: number, iowait: number, guest: number): string =>
  `cpu  ${user} 10 200 ${idle} ${iowait} 0 30 5 ${guest} 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 12345\n`;

test("the machine's CPU is read from /proc/stat's cpu line, iowait as idle and guest time not counted twice", () => {
  assert.deepEqual(parseMachineCpu(STAT(1000, 500, 20, 300)), {
    total: 1000 + 10 + 200 + 500 + 20 + 0 + 30 + 5,
    idle: 520,
  });
  assert.throws(() => parseMachineCpu('intr 1 2 3\n'), /no cpu line/);
});

test("a phase's idle share is the idle ticks' part of all ticks between two readings", () => {
  const before = parseMachineCpu(STAT(1000, 500, 20, 0));
  // 300 ticks passed: 240 busy (user), 60 idle (50 idle + 10 iowait).
  const after = parseMachineCpu(STAT(1240, 550, 30, 0));
  assert.equal(idlePercent(before, after), 20);
  assert.ok(Number.isNaN(idlePercent(before, before)), 'no time passed: no share');
});

test('two halves of a phase give an idle share weighted by their lengths', () => {
  assert.equal(meanIdle({ idlePct: 10, secs: 3 }, { idlePct: 30, secs: 1 }), 15);
});

test("our CPU per request counts the egress process with the front and slots, against raw Puppeteer's client", () => {
  const service = { node: 30, egress: 14, chromium: 380, client: 9 };
  const raw = { node: 0, egress: 0, chromium: 370, client: 22 };
  assert.equal(ourCpu(service), 44);
  assert.equal(ourCpuOverRawClient(service, raw), 2);
  // Neither Chromium nor the bench's own client is ours.
  assert.equal(ourCpuOverRawClient({ ...service, chromium: 900, client: 50 }, raw), 2);
  assert.equal(ourCpuOverRawClient({ ...service, egress: 25 }, raw), 2.5);
  assert.deepEqual(meanCpu(service, { node: 40, egress: 16, chromium: 400, client: 11 }), {
    node: 35,
    egress: 15,
    chromium: 390,
    client: 10,
  });
});
