// The usage record file: one JSON line per request, written in order, and a
// disk that is slow or stuck costs the front a bounded amount of memory.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UsageLog, usageHeaders, type UsageRecord } from '../../../src/front/usage.js';
import { capturingLogger } from '../../helpers/service.js';

const toFile = { usageLog: { to: 'file', path: '/nowhere/usage.jsonl' } } as const;

const record = (i: number): UsageRecord => ({
  time: new Date(0).toISOString(),
  key: 'acme',
  requestId: `req-${i}`,
  code: 'OK',
  status: 200,
  wallMs: 12,
  cpuMs: 5,
});

test('a stuck usage file does not grow the front without bound: past the queue, records are dropped, counted and logged once', () => {
  const log = capturingLogger();
  let writes = 0;
  let counted = 0;
  // The disk never answers.
  const stuck = (): Promise<void> => {
    writes++;
    return new Promise<void>(() => undefined);
  };
  const max = 16 * 1024;
  const usage = new UsageLog(toFile, log.logger, { append: stuck, maxQueuedBytes: max, onDropped: () => counted++ });
  const n = 10_000;
  for (let i = 0; i < n; i++) usage.record(record(i));
  assert.ok(usage.queuedBytes <= max, `${usage.queuedBytes} bytes held`);
  assert.equal(writes, 1, 'one write at a time');
  const kept = Math.floor(max / (JSON.stringify(record(0)).length + 1));
  assert.ok(usage.dropped >= n - kept - 1, `dropped ${usage.dropped} of ${n}`);
  assert.equal(counted, usage.dropped, 'each dropped record is counted');
  const dropLines = log.lines.filter((l) => String(l.msg).startsWith('usage records are being dropped'));
  assert.equal(dropLines.length, 1, 'one log line for the spell, not one per record');
});

test('a slow usage file gets what queued meanwhile in one write, in order; dropping ends and is said to end', async () => {
  const log = capturingLogger();
  const written: string[] = [];
  let release = (): void => undefined;
  const slow = (_path: string, text: string): Promise<void> =>
    new Promise<void>((resolve) => {
      release = () => {
        written.push(text);
        resolve();
      };
    });
  const line = JSON.stringify(record(0)).length + 1;
  const usage = new UsageLog(toFile, log.logger, { append: slow, maxQueuedBytes: 3 * line });
  for (let i = 0; i < 5; i++) usage.record(record(i));
  // Three fit (the first is being written, two wait); two were dropped.
  assert.equal(usage.dropped, 2);
  release();
  await new Promise((r) => setImmediate(r));
  release();
  await usage.flushed();
  const ids = written
    .join('')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as UsageRecord).requestId);
  assert.deepEqual(ids, ['req-0', 'req-1', 'req-2']);
  assert.equal(written.length, 2, 'the two waiting records went in one write');
  assert.equal(usage.queuedBytes, 0);
  assert.ok(log.lines.some((l) => l.msg === 'usage records are written again' && l.dropped === 2));
});

test('usage headers: MiB with one decimal, the rest whole; a figure not known is left out', () => {
  assert.deepEqual(usageHeaders({ wallMs: 10.4, cpuMs: 3.6, pageMemoryPeakMb: 12.345, isolateHeapPeakMb: 2 }), {
    'X-Usage-Wall-Ms': '10',
    'X-Usage-Cpu-Ms': '4',
    'X-Usage-Page-Memory-Peak-MiB': '12.3',
    'X-Usage-Isolate-Heap-Peak-MiB': '2.0',
  });
});
