import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Metrics, type MetricsSources } from '../../../src/front/metrics.js';

const sources = (running: number): MetricsSources => ({
  running: () => running,
  queued: () => 0,
  slots: () => 4,
  contextsReady: () => 0,
  browserRestarts: () => 0,
  browserRecycles: () => 0,
  slotRestarts: () => 0,
  egressRestarts: () => 0,
  keyFileStale: () => false,
  keyFileReloadFailures: () => 0,
  memory: () => ({
    serviceMb: 4096,
    plannedMb: 2048,
    perRequestMb: 800,
    pageLimitMb: 512,
    scriptLimitMb: 128,
    reservedMb: 1024,
    inUseMb: 300,
    frontMb: 80,
    slotsMb: 70,
    chromiumMb: 150,
    pagesMb: 20,
  }),
  pageMemoryKills: () => 3,
});

function typeLines(text: string): string[] {
  return text.split('\n').filter((l) => l.startsWith('# TYPE '));
}

test('two services in one process count apart and share the process collectors, each metric once', async () => {
  const a = new Metrics(sources(1));
  const b = new Metrics(sources(2));
  a.requests.inc({ code: 'OK' });
  const [ta, tb] = [await a.text(), await b.text()];
  assert.match(ta, /^pagescript_jobs_running 1$/m);
  // The autoscaling signal's denominator: the slots, beside the running and queued gauges.
  assert.match(ta, /^pagescript_slots 4$/m);
  assert.match(tb, /^pagescript_jobs_running 2$/m);
  assert.match(ta, /^pagescript_requests_total\{code="OK"\} 1$/m);
  assert.doesNotMatch(tb, /^pagescript_requests_total\{code="OK"\}/m);
  for (const t of [ta, tb]) {
    // The process's own figures are there, from the one set of collectors.
    assert.match(t, /^pagescript_process_resident_memory_bytes \d+/m);
    assert.match(t, /^# TYPE pagescript_nodejs_eventloop_lag_seconds gauge$/m);
    const types = typeLines(t);
    assert.equal(new Set(types).size, types.length, 'a metric is declared twice');
  }
});

test('the memory budget, what is reserved, what each kind of process holds and page memory kills are exported', async () => {
  const t = await new Metrics(sources(1)).text();
  const MB = 2 ** 20;
  assert.match(t, new RegExp(`^pagescript_memory_budget_bytes ${4096 * MB}$`, 'm'));
  assert.match(t, new RegExp(`^pagescript_memory_reserved_bytes ${1024 * MB}$`, 'm'));
  assert.match(t, new RegExp(`^pagescript_memory_in_use_bytes\\{process="front"\\} ${80 * MB}$`, 'm'));
  assert.match(t, new RegExp(`^pagescript_memory_in_use_bytes\\{process="chromium"\\} ${150 * MB}$`, 'm'));
  assert.match(t, new RegExp(`^pagescript_memory_in_use_bytes\\{process="slots"\\} ${70 * MB}$`, 'm'));
  // process="executors": the deprecated name of process="slots", for one release.
  assert.match(t, new RegExp(`^pagescript_memory_in_use_bytes\\{process="executors"\\} ${70 * MB}$`, 'm'));
  assert.match(t, new RegExp(`^pagescript_page_memory_bytes ${20 * MB}$`, 'm'));
  assert.match(t, /^pagescript_page_memory_kills_total 3$/m);
});

test('slot restarts are counted under pagescript_slot_restarts_total and, for one release, its deprecated name', async () => {
  const t = await new Metrics({ ...sources(0), slotRestarts: () => 5 }).text();
  assert.match(t, /^pagescript_slot_restarts_total 5$/m);
  assert.match(t, /^pagescript_executor_restarts_total 5$/m);
  assert.match(t, /^# HELP pagescript_executor_restarts_total Deprecated: pagescript_slot_restarts_total/m);
});
