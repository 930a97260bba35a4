// A job's memory limit in its slot's group is the slot's limit at rest plus the
// request's share, whatever the slot holds as the job starts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../../src/common/config.js';
import { limitJobMemory } from '../../../src/front/jobs/job-memory.js';
import type { MemoryLimits, Part } from '../../../src/front/cgroups/memory-limits.js';

const MiB = 2 ** 20;

/** A slot's memory groups holding `usage` bytes now, recording the limits set. */
function groups(usage: number): { mem: MemoryLimits; limits: Map<Part, number> } {
  const limits = new Map<Part, number>();
  const mem = {
    rest: { slotBytes: 1000 * MiB, chromiumBytes: 600 * MiB },
    chromiumGroups: true,
    usageBytes: () => usage,
    oomKills: () => 0,
    resetPeak: () => undefined,
    limit: (_index: number, bytes: number, part: Part = 'slot') => {
      limits.set(part, bytes);
      return true;
    },
  };
  return { mem: mem as unknown as MemoryLimits, limits };
}

test('what earlier jobs left in a slot does not raise the next job’s memory limit', () => {
  const config = loadConfig({ API_KEYS: 'k'.repeat(32) }, () => 8192);
  const clean = groups(300 * MiB);
  const job = limitJobMemory(config, clean.mem, 0, { url: 'http://127.0.0.1/', script: '' } as never);
  const limit = clean.limits.get('slot');
  assert.equal(limit, 1000 * MiB + job.shareMb * MiB, 'the rest limit plus the request’s share');
  // A slot holding 5 GiB of leftovers gets the same limit, not 5 GiB more.
  const full = groups(5 * 1024 * MiB);
  limitJobMemory(config, full.mem, 0, { url: 'http://127.0.0.1/', script: '' } as never);
  assert.equal(full.limits.get('slot'), limit);
});
