// A short probe of our own CPU per request: the service's front, slot and
// egress processes' utime+stime (/proc/<pid>/stat) over N sequential requests
// against a local page, and over a quiet spell with no request. Not part of
// `npm run bench`; for before/after comparisons on a shared machine, where
// wall-clock figures mean nothing but CPU time per request still does.
//   node scripts/bootstrap.mjs run scripts/bench/cpu-probe.ts [N] [gapMs] [--profile]
import { createServer } from 'node:http';
import { cpuOwn, egressPids, slotPids } from './proc.js';
import { makeProfileDir, profileReport, readProfiles } from './profile.js';
import { agent, callService, ROOT, SCRIPT, startService } from './service.js';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const N = Number(args[0] ?? 60);
const GAP = Number(args[1] ?? 100);
const profile = process.argv.includes('--profile');
const PAGE = `<!doctype html><html><head><title>Bench Page</title></head><body><h1>Bench</h1>${'<p>lorem ipsum dolor sit amet</p>'.repeat(50)}</body></html>`;

const fixture = createServer({ keepAlive: true }, (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(PAGE);
});
await new Promise<void>((r) => fixture.listen(0, '127.0.0.1', r));
const port = (fixture.address() as { port: number }).port;
const dir = profile ? makeProfileDir() : undefined;
// PROBE_DIST: another build's dist/ (a copy of it under the repository, so that node_modules resolve), for A/B runs.
const svc = await startService('shell', { EGRESS_ALLOWLIST: `127.0.0.1:${port}` }, dir, process.env.PROBE_DIST);
const front = svc.child.pid as number;
const body = { url: `http://127.0.0.1:${port}/`, script: SCRIPT };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
for (let i = 0; i < 10; i++) await callService(svc.base, body);
await sleep(2000);

const pids = (): { front: number[]; slot: number[]; egress: number[] } => ({
  front: [front],
  slot: slotPids(front),
  egress: egressPids(front),
});
// Each process's CPU as last seen: a slot process replaced during the run keeps what it had used by then.
const lastSeen = new Map<number, { kind: string; ms: number }>();
const sample = (): void => {
  for (const [kind, list] of Object.entries(pids()))
    for (const pid of list) {
      const ms = cpuOwn(pid);
      if (ms > 0 || !lastSeen.has(pid)) lastSeen.set(pid, { kind, ms });
    }
};
const read = (_p?: unknown): Record<string, number> => {
  sample();
  const out: Record<string, number> = { front: 0, slot: 0, egress: 0 };
  for (const { kind, ms } of lastSeen.values()) out[kind] = (out[kind] ?? 0) + ms;
  return out;
};
const sampler = setInterval(sample, 250);

// At rest: 10 s with no request (PROBE_REST_MS: another span; the probe prints when it begins).
const p0 = pids();
const r0 = read(p0);
const restMs = Number(process.env.PROBE_REST_MS ?? 10_000);
console.log(`at rest from ${new Date().toISOString()} for ${restMs} ms`);
await sleep(restMs);
const r1 = read(p0);
const rest = Object.fromEntries(
  Object.keys(r0).map((k) => [k, Math.round((((r1[k] as number) - (r0[k] as number)) * 10_000) / restMs)]),
);

const p1 = pids();
const a = read(p1);
const t0 = process.hrtime.bigint() / 1000n;
let bad = 0;
for (let i = 0; i < N; i++) {
  const s = await callService(svc.base, body);
  if (s.status !== 200) bad++;
  if (GAP > 0) await sleep(GAP);
}
await sleep(1500);
const t1 = process.hrtime.bigint() / 1000n;
const p2 = pids();
const b = read(p1);
const per = Object.fromEntries(Object.keys(a).map((k) => [k, ((b[k] as number) - (a[k] as number)) / N]));
const total = Object.values(per).reduce((x, y) => x + y, 0);
const same = JSON.stringify(p1) === JSON.stringify(p2);
console.log(
  JSON.stringify({
    n: N,
    gapMs: GAP,
    non200: bad,
    samePids: same,
    restMsPer10s: rest,
    perRequestMs: Object.fromEntries(Object.entries(per).map(([k, v]) => [k, Math.round(v * 10) / 10])),
    ourMs: Math.round(total * 10) / 10,
    monotonicUs: [String(t0), String(t1)],
  }),
);
clearInterval(sampler);
await svc.stop();
await agent.close();
fixture.close();
if (dir) console.log(profileReport(readProfiles(dir), ROOT));
