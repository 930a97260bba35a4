// npm run bench [-- out.json] [--chromium shell|full] [--profile] [--soak N | --soak-minutes M] [--prewarm-sweep 0,1,2,3]
//                [--neighbour [--attacks REGEX] [--parades N]] [--real-pages [--rounds N]]
//
// Starts a fixture page and, for each Chromium (the headless shell and the full
// browser, or the one --chromium names), the service (dist/server.js, as `npm
// start` runs it) on loopback and, in the same run, raw-Puppeteer baselines on
// the same binary and page, and raw Puppeteer with stock flags on the full
// browser. Figures are reported as ratios against those baselines, because
// these machines are noisy. --prewarm-sweep measures the service with each
// PREWARM_CONTEXTS given; --neighbour runs the noisy-neighbour bench
// (neighbour.ts, docs/performance.md); --real-pages the saved real pages
// with and without options.blockResourceTypes (real-pages.ts); --profile
// has the default run's service write CPU profiles and prints their top
// functions (profile.ts). See docs/performance.md.
//
// The parts: main.ts (this file: the fixture page, which run), args.ts,
// service.ts, baselines.ts, measure.ts, proc.ts, memory.ts, compare.ts,
// report.ts, profile.ts, sweep.ts, soak.ts, neighbour.ts, real-pages.ts.
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { cpus, loadavg, totalmem } from 'node:os';
import { CHROMIUM_PATHS, type ChromiumMode } from '../../src/common/config.js';
import { parseArgs, USAGE } from './args.js';
import { benchMode, type ModeResult } from './compare.js';
import { round } from './measure.js';
import { neighbour, neighbourLines } from './neighbour.js';
import { cpuMs, cpuOwn, chromiumPids, slotPids } from './proc.js';
import { realPagesBench, realPagesReport } from './real-pages.js';
import { report } from './report.js';
import { makeProfileDir, type ProcessProfile, profileReport, readProfiles } from './profile.js';
import { agent, callService, health, ROOT, startService } from './service.js';
import { FORM_DONE_PAGE, FORM_DONE_PATH, FORM_PAGE, FORM_PATH, soak } from './soak.js';
import { prewarmSweep } from './sweep.js';

const PAGE = `<!doctype html><html><head><title>Bench Page</title></head><body><h1>Bench</h1>${'<p>lorem ipsum dolor sit amet</p>'.repeat(50)}</body></html>`;

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

async function main(): Promise<void> {
  const { run, modes, outFile, profile } = parseArgs(process.argv.slice(2));
  if (run.kind === 'help') {
    console.log(USAGE);
    return;
  }
  const mode = modes[0] as ChromiumMode;

  const fixture = createServer({ keepAlive: true }, (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    const path = new URL(req.url ?? '/', 'http://fixture').pathname;
    res.end(path === FORM_PATH ? FORM_PAGE : path === FORM_DONE_PATH ? FORM_DONE_PAGE : PAGE);
  });
  const fixturePort = await listen(fixture);
  const pageUrl = `http://127.0.0.1:${fixturePort}/`;
  const machine = {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: round(totalmem() / 2 ** 30),
    node: process.version,
    chromium: modes.map((m) => CHROMIUM_PATHS[m]),
    date: new Date().toISOString(),
    loadAverage: loadavg().map((x) => round(x, 2)),
  };
  console.log(
    `pagescript bench — ${machine.date}\n${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Node ${machine.node}, load average ${machine.loadAverage.join(' ')}\n`,
  );
  const finish = async (result: Record<string, unknown>): Promise<void> => {
    fixture.close();
    await agent.close();
    if (outFile) {
      writeFileSync(outFile, JSON.stringify({ machine, ...result, loadAverageAfter: loadavg() }, null, 2));
      console.log(`\nfigures written to ${outFile}`);
    }
    console.log(
      `load average at the end: ${loadavg()
        .map((x) => round(x, 2))
        .join(' ')}`,
    );
  };

  switch (run.kind) {
    case 'neighbour': {
      const result = await neighbour({
        mode,
        startService: (env) => startService(mode, env),
        call: callService,
        health,
        pageUrl,
        fixturePort,
        ...(run.attacks === undefined ? {} : { attacks: run.attacks }),
        parades: run.parades,
      });
      console.log(JSON.stringify(result, null, 2));
      console.log(`\n${neighbourLines(result).join('\n')}`);
      await finish({ neighbour: result });
      return;
    }
    case 'real-pages': {
      const result = await realPagesBench(
        {
          mode,
          startService: (env) => startService(mode, env),
          call: (base, body) => callService(base, body),
          cpu: (pid) => ({
            node: [pid, ...slotPids(pid)].reduce((a, p) => a + cpuOwn(p), 0),
            chromium: cpuMs(chromiumPids(pid)),
          }),
        },
        ...(run.rounds === undefined ? [] : [run.rounds]),
      );
      console.log(realPagesReport(result));
      await finish({ realPages: result });
      return;
    }
    case 'soak': {
      const result = await soak(mode, pageUrl, fixturePort, run.length);
      await finish({ soak: result });
      return process.exit(result.pass ? 0 : 1);
    }
    case 'prewarm-sweep': {
      const rows = await prewarmSweep(mode, run.counts, pageUrl, fixturePort);
      await finish({ prewarmSweep: rows });
      return;
    }
    case 'compare': {
      const results: ModeResult[] = [];
      const profiles: Record<string, ProcessProfile[]> = {};
      for (const m of modes) {
        const dir = profile ? makeProfileDir() : undefined;
        const r = await benchMode(m, pageUrl, fixturePort, results[0], dir);
        console.log(report(r));
        results.push(r);
        if (dir !== undefined) {
          // Written as each process exited: the service has stopped.
          profiles[m] = readProfiles(dir);
          console.log(
            `### CPU profile, CHROMIUM=${m} (a profiled run: its timings include the profiler's cost)\n\n${profileReport(profiles[m], ROOT)}`,
          );
        }
      }
      await finish({ modes: results, ...(profile ? { profiles } : {}) });
      return;
    }
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
