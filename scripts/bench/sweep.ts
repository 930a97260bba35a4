// --prewarm-sweep: the service with each PREWARM_CONTEXTS given, for tuning the default.
import { type ChromiumMode } from '../../src/common/config.js';
import { launchRaw, MACHINE_ARGS } from './baselines.js';
import { PER_CLIENT } from './compare.js';
import { BACK_TO_BACK_MS, concurrent, pct, pool, round, sequential } from './measure.js';
import { settledMemory } from './memory.js';
import { callService, SCRIPT, type ServiceSample, startService } from './service.js';

/**
 * The service with each PREWARM_CONTEXTS given: back-to-back and 300 ms-apart
 * p50 against the floor, 4-client throughput, memory at rest. For tuning the
 * default; the floor is measured beside each.
 */
export async function prewarmSweep(
  mode: ChromiumMode,
  counts: number[],
  pageUrl: string,
  fixturePort: number,
): Promise<Record<string, unknown>[]> {
  const browser = await launchRaw(mode, MACHINE_ARGS);
  const openPage = await browser.newPage();
  const floorFn = async (): Promise<string> => {
    await openPage.goto(pageUrl, { waitUntil: 'load' });
    return await openPage.title();
  };
  const out: Record<string, unknown>[] = [];
  console.log(
    `| PREWARM_CONTEXTS (${mode}) | floor p50 | back-to-back p50 | ×floor | 300 ms apart p50 | ×floor | 4 clients req/s | tree PSS at rest MB |\n|---|---|---|---|---|---|---|---|`,
  );
  for (const n of counts) {
    const svc = await startService(mode, {
      EGRESS_ALLOWLIST: `127.0.0.1:${fixturePort}`,
      PREWARM_CONTEXTS: String(n),
    });
    const body = { url: pageUrl, script: SCRIPT };
    const call = (): Promise<ServiceSample> => callService(svc.base, body);
    for (let i = 0; i < 10; i++) await call();
    const rest = await settledMemory(svc.child.pid as number);
    const floor: number[] = [];
    const b2b: number[] = [];
    const apart: number[] = [];
    for (let r = 0; r < 3; r++) {
      floor.push(...(await sequential(floorFn, 20, BACK_TO_BACK_MS)));
      await call();
      b2b.push(...(await sequential(call, 20, BACK_TO_BACK_MS)));
      apart.push(...(await sequential(call, 10)));
    }
    const t = pool(await concurrent(call, 4, PER_CLIENT), await concurrent(call, 4, PER_CLIENT));
    await svc.stop();
    const f = pct(floor, 50);
    const row = {
      prewarmContexts: n,
      floorP50: round(f),
      backToBackP50: round(pct(b2b, 50)),
      backToBackOverFloor: round(pct(b2b, 50) / f, 2),
      apartP50: round(pct(apart, 50)),
      apartOverFloor: round(pct(apart, 50) / f, 2),
      rpsAt4: t.rps,
      treePssAtRestMb: rest.treePssMb,
    };
    console.log(`| ${Object.values(row).join(' | ')} |`);
    out.push(row);
  }
  await browser.close();
  return out;
}
