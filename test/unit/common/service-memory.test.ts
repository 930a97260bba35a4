// SERVICE_MEMORY_MB: where its default comes from, and how MAX_CONCURRENCY and MAX_CONNECTIONS follow from it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cpus } from 'node:os';
import {
  CHROMIUM_BASE_MB,
  EGRESS_BASE_MB,
  FRONT_BASE_MB,
  SLOT_BASE_MB,
  SLOT_HEAP_BASE_MB,
  concurrencyByMemory,
  defaultMaxConnections,
  hostRequestMb,
  loadConfig,
  memoryPlan,
} from '../../../src/common/config.js';
import { detectServiceMemoryMb, type MemorySources } from '../../../src/common/service-memory.js';

const GiB = 2 ** 30;

function sources(files: Record<string, string>, constrained = 0, total = 16 * GiB): MemorySources {
  return { readFile: (p) => files[p], constrainedMemory: () => constrained, totalMemory: () => total };
}

test('cgroup v1: memory.limit_in_bytes of our own cgroup', () => {
  const src = sources({
    '/proc/self/cgroup': '4:memory:/process_api/abc\n0::/\n',
    '/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes': String(3 * GiB),
  });
  assert.equal(detectServiceMemoryMb(src), 3 * 1024);
});

test('cgroup v2: memory.max of our own cgroup; "max" is no limit', () => {
  const limited = sources({
    '/proc/self/cgroup': '0::/app.slice/x\n',
    '/sys/fs/cgroup/app.slice/x/memory.max': String(GiB),
  });
  assert.equal(detectServiceMemoryMb(limited), 1024);
  const unlimited = sources({ '/proc/self/cgroup': '0::/x\n', '/sys/fs/cgroup/x/memory.max': 'max\n' });
  assert.equal(detectServiceMemoryMb(unlimited), 16 * 1024);
});

test("cgroup v1's 'unlimited' (about 2^63) falls back to process.constrainedMemory(), then the machine", () => {
  const files = {
    '/proc/self/cgroup': '4:memory:/\n',
    '/sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712',
  };
  assert.equal(detectServiceMemoryMb(sources(files, 2 * GiB)), 2048);
  assert.equal(detectServiceMemoryMb(sources(files, 0, 8 * GiB)), 8192);
});

test("Node reporting no limit (0, or 2^64 on cgroup v1) is the machine's memory", () => {
  assert.equal(detectServiceMemoryMb(sources({}, 0, 8 * GiB)), 8192);
  assert.equal(detectServiceMemoryMb(sources({}, 2 ** 64, 8 * GiB)), 8192);
});

const shape = {
  chromium: 'shell',
  pageMemoryMb: 512,
  scriptMemoryMb: 128,
  maxResultBytes: 10 << 20,
} as const;

test('the plan: the front and egress at rest, a slot process and a Chromium per slot at rest, and what each running request may add', () => {
  const one = memoryPlan({ ...shape, concurrency: 1 });
  assert.equal(one.perRequestMb, 512 + 128 + hostRequestMb(10 << 20));
  assert.equal(one.baseMb, FRONT_BASE_MB + EGRESS_BASE_MB);
  assert.equal(one.plannedMb, one.baseMb + SLOT_BASE_MB + CHROMIUM_BASE_MB.shell + one.perRequestMb);
  // Three slots: three slot processes, three Chromium at rest, three requests.
  const three = memoryPlan({ ...shape, concurrency: 3 });
  assert.equal(
    three.plannedMb,
    FRONT_BASE_MB + EGRESS_BASE_MB + 3 * (SLOT_BASE_MB + CHROMIUM_BASE_MB.shell) + 3 * three.perRequestMb,
  );
});

test("a slot's host side has a ceiling: its process at rest, its script's isolate and its host-side queues; V8's heap the queues and a base", () => {
  const plan = memoryPlan({ ...shape, concurrency: 2 });
  assert.equal(plan.slotHostLimitMb, SLOT_BASE_MB + 128 + hostRequestMb(10 << 20));
  assert.equal(plan.slotHeapMb, SLOT_HEAP_BASE_MB + hostRequestMb(10 << 20));
  // Inside what the plan reserves for the slot: its process at rest and its request's share.
  assert.ok(plan.slotHostLimitMb <= plan.slotBaseMb + plan.perRequestMb);
});

test('MAX_CONCURRENCY defaults to what fits in SERVICE_MEMORY_MB (and the cores)', () => {
  const plan = (c: number): number => memoryPlan({ ...shape, concurrency: c }).plannedMb;
  assert.equal(concurrencyByMemory(plan(1), shape), 1);
  assert.equal(concurrencyByMemory(plan(2) - 1, shape), 1);
  assert.equal(concurrencyByMemory(plan(2), shape), 2);
  assert.equal(concurrencyByMemory(plan(3), shape), 3);
  const c = loadConfig({ CHROMIUM: 'shell', SERVICE_MEMORY_MB: String(plan(1) + 10) });
  assert.equal(c.maxConcurrency, 1);
  assert.equal(c.pageMemoryMb, 512);
  assert.equal(c.memory.plannedMb, plan(1));
  assert.equal(c.maxConcurrencyAsked, undefined);
  // Never more than the cores (at least two) when memory is plenty.
  assert.equal(
    loadConfig({ CHROMIUM: 'shell', SERVICE_MEMORY_MB: String(plan(200)) }).maxConcurrency,
    Math.max(2, cpus().length),
  );
});

test('an explicit MAX_CONCURRENCY larger than what fits is cut to what fits (a request beyond it waits)', () => {
  const small = { ...shape, pageMemoryMb: 256, scriptMemoryMb: 64 };
  const c = loadConfig({
    CHROMIUM: 'shell',
    SERVICE_MEMORY_MB: String(memoryPlan({ ...small, concurrency: 3 }).plannedMb),
    PAGE_MEMORY_MB: '256',
    SCRIPT_MEMORY_MB: '64',
    MAX_CONCURRENCY: '8',
  });
  assert.equal(c.maxConcurrency, 3);
  assert.equal(c.maxConcurrencyAsked, 8);
});

test('the full browser is planned with a larger Chromium at rest', () => {
  const shell = memoryPlan({ ...shape, concurrency: 2 });
  const full = memoryPlan({ ...shape, chromium: 'full', concurrency: 2 });
  assert.equal(full.plannedMb - shell.plannedMb, 2 * (CHROMIUM_BASE_MB.full - CHROMIUM_BASE_MB.shell));
});

test('without SERVICE_MEMORY_MB the detected memory is used; bad values are named', () => {
  const c = loadConfig({}, () => 4096);
  assert.equal(c.serviceMemoryMb, 4096);
  assert.throws(() => loadConfig({ CHROMIUM: 'shell', SERVICE_MEMORY_MB: '10' }), /SERVICE_MEMORY_MB/);
  assert.throws(() => loadConfig({ PAGE_MEMORY_MB: '1' }), /PAGE_MEMORY_MB/);
});

test('MAX_CONNECTIONS defaults to one per MiB of SERVICE_MEMORY_MB, from 256 to 16384', () => {
  assert.equal(defaultMaxConnections(1024), 1024);
  assert.equal(loadConfig({ CHROMIUM: 'shell', SERVICE_MEMORY_MB: '2048' }).maxConnections, 2048);
  assert.equal(loadConfig({ CHROMIUM: 'shell', SERVICE_MEMORY_MB: '300' }).maxConnections, 300);
  assert.equal(defaultMaxConnections(100), 256);
  assert.equal(loadConfig({ CHROMIUM: 'shell', SERVICE_MEMORY_MB: String(64 * 1024) }).maxConnections, 16_384);
  assert.equal(loadConfig({ CHROMIUM: 'shell', SERVICE_MEMORY_MB: '2048', MAX_CONNECTIONS: '50' }).maxConnections, 50);
});
