// SECURITY: what the slots hold is read by walking every slot's processes in
// /proc; a caller who may not see it (unauthenticated /health) must not make the
// front walk, and one who may (/metrics in a loop) walks at a bounded pace.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../../src/common/config.js';
import { MEMORY_READ_REUSE_MS, SlotStatus } from '../../../src/front/slots/slot-status.js';
import type { SlotProcess } from '../../../src/front/slots/slot-process.js';
import { memoryReport } from '../../../src/front/memory-report.js';
import type { SlotMemory } from '../../../src/protocol/slot-wire.js';

test('a /health flood without the token reads no slot memory', () => {
  let reads = 0;
  const slots = {
    get memory(): SlotMemory {
      reads++;
      return { slotBytes: 2 ** 30, chromiumBytes: 2 ** 30, pageBytes: 2 ** 20, pageLimitKills: 0 };
    },
  };
  const config = loadConfig({}, () => 4096);
  for (let i = 0; i < 1000; i++) {
    const m = memoryReport(config, 0, slots, false);
    assert.equal(m.inUseMb, 0);
    assert.equal(m.serviceMb, config.serviceMemoryMb);
  }
  assert.equal(reads, 0);
  assert.equal(memoryReport(config, 0, slots).slotsMb, 1024);
  assert.equal(reads, 1);
});

test('a /metrics flood walks the slots at most once per reuse period', () => {
  let walks = 0;
  // A live slot process whose pid getter counts the walks (each walk reads it once).
  const proc = {
    gone: false,
    jobs: new Map(),
    memory: { pageBytes: 0, pageLimitKills: 0 },
    memoryKills: 0,
    slot: { index: 0 },
    child: {
      get pid(): number {
        walks++;
        return process.pid;
      },
    },
  } as unknown as SlotProcess;
  const status = new SlotStatus(new Set([proc]), () => undefined);
  const start = performance.now();
  for (let i = 0; i < 200; i++) assert.ok(status.memory.slotBytes > 0);
  const periods = Math.ceil((performance.now() - start) / MEMORY_READ_REUSE_MS) + 1;
  assert.ok(walks >= 1 && walks <= periods, `${walks} walks in ${periods} periods`);
});
