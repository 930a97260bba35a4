// npm run bench -- --profile: the service's front, slot 0's process and the
// egress process run with V8's --cpu-prof (CPU_PROFILE_DIR for the children,
// docs/configuration.md), and once the service has stopped each profile's ten
// functions with the most self time are printed.
import { chmodSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { round } from './measure.js';

/** The parts of a .cpuprofile (Chrome DevTools' Profile) that self time is computed from. */
export interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: {
      readonly functionName: string;
      readonly url: string;
      readonly lineNumber: number;
    };
    readonly hitCount?: number;
  }[];
  /** Microseconds. */
  readonly startTime: number;
  readonly endTime: number;
  /** The node sampled at each tick, and the microseconds since the tick before (the first: since startTime). */
  readonly samples?: readonly number[];
  readonly timeDeltas?: readonly number[];
}

/** A function's self time: the samples that caught it at the top of the stack. */
export interface SelfTime {
  readonly name: string;
  readonly url: string;
  /** 1-based, as an editor shows it; 0 when V8 gives none. */
  readonly line: number;
  readonly selfMs: number;
  /** Of the profile's busy time (every sample but "(idle)"), in percent. */
  readonly percent: number;
}

/** Not the process's work: the thread waiting for an event, and the tree's root. */
const NOT_WORK = new Set(['(idle)', '(root)']);

/**
 * Self time per function (name, url and line together: two closures of one
 * name are two functions), most first. Each sample lasts until the next one
 * (the last until endTime), as DevTools counts it; a profile without samples
 * spreads its length over the nodes' hit counts.
 */
export function selfTimes(p: CpuProfile): SelfTime[] {
  const byNode = new Map<number, number>();
  const add = (id: number, us: number): void => void byNode.set(id, (byNode.get(id) ?? 0) + us);
  const samples = p.samples ?? [];
  const deltas = p.timeDeltas ?? [];
  if (samples.length > 0 && samples.length === deltas.length) {
    let at = p.startTime;
    const times = deltas.map((d) => (at += d));
    samples.forEach((id, i) => add(id, Math.max(0, (times[i + 1] ?? p.endTime) - (times[i] as number))));
  } else {
    const hits = p.nodes.reduce((a, n) => a + (n.hitCount ?? 0), 0);
    const perHit = hits > 0 ? (p.endTime - p.startTime) / hits : 0;
    for (const n of p.nodes) add(n.id, (n.hitCount ?? 0) * perHit);
  }
  const byFunction = new Map<string, { name: string; url: string; line: number; us: number }>();
  let busyUs = 0;
  for (const n of p.nodes) {
    const us = byNode.get(n.id) ?? 0;
    const { functionName, url, lineNumber } = n.callFrame;
    const name = functionName === '' ? '(anonymous)' : functionName;
    if (us === 0 || NOT_WORK.has(name)) continue;
    busyUs += us;
    const key = `${name}\n${url}\n${lineNumber}`;
    const f = byFunction.get(key) ?? { name, url, line: lineNumber >= 0 ? lineNumber + 1 : 0, us: 0 };
    f.us += us;
    byFunction.set(key, f);
  }
  return [...byFunction.values()]
    .sort((a, b) => b.us - a.us)
    .map((f) => ({
      name: f.name,
      url: f.url,
      line: f.line,
      selfMs: round(f.us / 1000, 1),
      percent: round((100 * f.us) / busyUs, 1),
    }));
}

/** One profile written by one process: which (the folder), its pid (from Node's file name), its busy time and top ten. */
export interface ProcessProfile {
  readonly process: string;
  readonly pid: number;
  readonly file: string;
  readonly busyMs: number;
  readonly top: SelfTime[];
}

/** Each folder the service was told to profile into: the front (the bench's flag), the egress process and slot 0. */
export const PROFILED = ['front', 'egress', 'slot-0'] as const;

/**
 * A directory every profiled process may write in: as root, the slot and the
 * egress process run as users of their own, and make their folder themselves.
 */
export function makeProfileDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pagescript-profile-'));
  chmodSync(dir, 0o1777);
  return dir;
}

/** The front's own flags for `dir` (the children's come from CPU_PROFILE_DIR). */
export const frontProfileArgs = (dir: string): string[] => ['--cpu-prof', `--cpu-prof-dir=${join(dir, 'front')}`];

/** Every profile in `dir`'s folders, each with its ten functions of most self time. */
export function readProfiles(dir: string): ProcessProfile[] {
  const out: ProcessProfile[] = [];
  for (const process of PROFILED) {
    let files: string[];
    try {
      files = readdirSync(join(dir, process)).filter((f) => f.endsWith('.cpuprofile'));
    } catch {
      continue; // that process wrote none (killed, or never started)
    }
    for (const file of files.sort()) {
      const all = selfTimes(JSON.parse(readFileSync(join(dir, process, file), 'utf8')) as CpuProfile);
      out.push({
        process,
        // CPU.<date>.<time>.<pid>.<thread>.<sequence>.cpuprofile
        pid: Number(file.split('.')[3] ?? NaN),
        file: join(dir, process, file),
        busyMs: round(
          all.reduce((a, f) => a + f.selfMs, 0),
          0,
        ),
        top: all.slice(0, 10),
      });
    }
  }
  return out;
}

/** A script's URL as the report shows it: under the repository, or from node_modules on. */
export function shortUrl(url: string, root: string): string {
  const path = url.replace(/^file:\/\//, '');
  const inModules = path.lastIndexOf('/node_modules/');
  if (inModules >= 0) return path.slice(inModules + 1);
  return path.startsWith(`${root}/`) ? path.slice(root.length + 1) : path;
}

/** The profiles as Markdown tables, one per process, for docs/performance.md's "Profile". */
export function profileReport(profiles: readonly ProcessProfile[], root: string): string {
  if (profiles.length === 0) return 'no CPU profile was written (was the service stopped with SIGKILL?)\n';
  const lines: string[] = [];
  for (const p of profiles) {
    lines.push(
      `#### ${p.process} (pid ${p.pid}): ${p.busyMs} ms busy`,
      '',
      `\`${p.file}\``,
      '',
      '| function | where | self ms | % of busy |',
      '|---|---|---|---|',
      ...p.top.map(
        (f) =>
          `| \`${f.name}\` | ${f.url === '' ? '(native)' : `${shortUrl(f.url, root)}:${f.line}`} | ${f.selfMs} | ${f.percent} |`,
      ),
      '',
    );
  }
  return lines.join('\n');
}
