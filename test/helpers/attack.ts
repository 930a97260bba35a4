// One tenant's attack beside another tenant's plain request on the same slot process:
// what each got, in which order, and how far the slot process's peak memory grew.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import type { FixtureServer } from './fixtures.js';
import type { Reply, TestService } from './service.js';
import { until } from './wait.js';

/** A field of /proc/<pid>/status, in bytes. */
function statusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? NaN) * 1024;
}

/**
 * Resets process pid's peak resident memory (VmHWM) to its resident memory now (Linux: 5 > clear_refs);
 * the function returned reads how far the peak has grown above it since, in MiB.
 */
export function watchPeakGrowth(pid: number): () => number {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  const rssBefore = statusBytes(pid, 'VmRSS');
  return () => (statusBytes(pid, 'VmHWM') - rssBefore) / 2 ** 20;
}

export interface Attack {
  attacker: Reply;
  innocent: Reply;
  /** The innocent reply came while the attacker's request was still running. */
  innocentFirst: boolean;
  /** The slot process's peak resident memory during the attack, above its resident memory before, in MiB. */
  growthMb: number;
}

/**
 * Runs script on the fixtures' /page as the service's test key, once its page has
 * told the test it started (a hit on /started), then a plain request on /innocent
 * with otherKey; the slot process must live through both.
 */
export async function attackBeside(
  svc: TestService,
  fixtures: FixtureServer,
  otherKey: string,
  script: string,
): Promise<Attack> {
  const [pid] = svc.service.slots.pids;
  assert.ok(pid, 'a slot process runs');
  const peakGrowthMb = watchPeakGrowth(pid);
  const started = fixtures.hits.get('/started') ?? 0;
  let attackerDone = false;
  const attacker = svc
    .post({
      url: fixtures.url('/page'),
      script: `await page.evaluate(() => fetch('/started').then((r) => r.text()));\n${script}`,
    })
    .finally(() => (attackerDone = true));
  await until(() => (fixtures.hits.get('/started') ?? 0) > started, 'the attack to start', { timeoutMs: 60_000 });
  const innocent = await svc.post(
    { url: fixtures.url('/innocent'), script: 'return await page.title()' },
    { 'x-gateway-key': otherKey },
  );
  const innocentFirst = !attackerDone;
  const attackerReply = await attacker;
  const growthMb = peakGrowthMb();
  // The attacker took the first slot; the other key's request may have started another slot process beside it.
  assert.ok(svc.service.slots.pids.includes(pid), "the attacker's slot process lived through the attack");
  return { attacker: attackerReply, innocent, innocentFirst, growthMb };
}
