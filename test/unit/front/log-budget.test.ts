// How much a child may have the front log (src/front/child-guard/log-budget.ts):
// a budget of lines and bytes a second, the rest dropped, counted and reported.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LogBudget } from '../../../src/front/child-guard/log-budget.js';
import { createLogger } from '../../../src/common/log.js';

function logLines() {
  const raw: string[] = [];
  const logger = createLogger('info', { write: (line: string) => void raw.push(line) });
  return { logger, lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

test('a child flooding the front with log lines gets its budget a second, and the rest is dropped and counted (the front grew to 2.5 GB)', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let now = 0;
  const log = logLines();
  const budget = new LogBudget(log.logger, { slotPid: 7 }, { linesPerS: 10, bytesPerS: 1000, now: () => now });
  // Two seconds' worth at once after a quiet spell: 20 lines.
  let admitted = 0;
  for (let i = 0; i < 100; i++) if (budget.admit(10)) admitted++;
  assert.equal(admitted, 20);
  assert.equal(budget.dropped, 80);
  // A second later: ten more lines.
  now += 1000;
  admitted = 0;
  for (let i = 0; i < 100; i++) if (budget.admit(10)) admitted++;
  assert.equal(admitted, 10);
  // Bytes count too: at most two seconds' worth, 2000, so one line of 1500 and not a second.
  now += 1000;
  assert.equal(budget.admit(1500), true);
  assert.equal(budget.admit(1500), false);
  t.mock.timers.tick(1000);
  const report = log.lines().filter((l) => l.msg === 'log lines of a child process dropped past its budget');
  assert.equal(report.length, 1, 'one report a second, not a line per drop');
  assert.equal(report[0]?.slotPid, 7);
  assert.equal(report[0]?.droppedTotal, 171);
});
