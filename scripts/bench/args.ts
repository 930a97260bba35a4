// The bench's command line: which run, on which Chromium, and where the figures go.
import { type ChromiumMode } from '../../src/common/config.js';

export const USAGE = `npm run bench [-- out.json] [--chromium shell|full] [--profile] [--soak N | --soak-minutes M]
               [--prewarm-sweep 0,1,2,3] [--neighbour [--attacks REGEX] [--parades N]] [--real-pages [--rounds N]] [--help]`;

/**
 * BENCH_QUICK=1: every phase a few requests long, to check that a run goes
 * through and prints its lines (its figures mean nothing); unset, the real run.
 */
export const QUICK = process.env.BENCH_QUICK === '1';

/** Which run the bench makes; `compare` (the default) measures each Chromium against its baselines. */
export type Run =
  | { readonly kind: 'compare' }
  | { readonly kind: 'soak'; readonly length: SoakLength }
  | { readonly kind: 'prewarm-sweep'; readonly counts: number[] }
  | { readonly kind: 'neighbour'; readonly attacks?: RegExp; readonly parades: number }
  | { readonly kind: 'real-pages'; readonly rounds?: number }
  | { readonly kind: 'help' };

/** How long a soak runs: a number of requests, or a duration. */
export type SoakLength = { readonly requests: number } | { readonly minutes: number };

export interface BenchArgs {
  readonly run: Run;
  /** The Chromiums measured: both, or the one --chromium names (the others use the first). */
  readonly modes: ChromiumMode[];
  /** Where the figures are written as JSON, when given. */
  readonly outFile?: string;
  /** --profile (the default run only): the service's front, slot 0 and egress process run with --cpu-prof. */
  readonly profile: boolean;
}

/** Flags that take a value (--executors is no longer read; still skipped as a value-taking flag). */
const VALUED = new Set([
  '--chromium',
  '--soak',
  '--soak-minutes',
  '--prewarm-sweep',
  '--rounds',
  '--attacks',
  '--parades',
  '--executors',
]);

export function parseArgs(args: readonly string[]): BenchArgs {
  const valueOf = (flag: string): string | undefined => {
    const at = args.indexOf(flag);
    return at >= 0 ? args[at + 1] : undefined;
  };
  const only = valueOf('--chromium');
  if (only !== undefined && only !== 'shell' && only !== 'full') throw new Error('--chromium must be shell or full');
  const modes: ChromiumMode[] = only ? [only] : ['shell', 'full'];
  // The one argument that is neither a flag nor a flag's value (--neighbour and --real-pages take none).
  const outFile = args.find((a, i) => !a.startsWith('--') && !VALUED.has(args[i - 1] ?? ''));
  const soakN = Number(valueOf('--soak') ?? 0);
  const soakMinutes = Number(valueOf('--soak-minutes') ?? 0);
  if (!Number.isFinite(soakN) || soakN < 0 || !Number.isFinite(soakMinutes) || soakMinutes < 0)
    throw new Error('--soak takes a count of requests, --soak-minutes a number of minutes');
  const sweep = valueOf('--prewarm-sweep');
  const attacks = valueOf('--attacks');
  const rounds = valueOf('--rounds');
  // The order in which the runs were always chosen when several are asked for.
  const run: Run = args.includes('--help')
    ? { kind: 'help' }
    : args.includes('--neighbour')
      ? {
          kind: 'neighbour',
          ...(attacks !== undefined ? { attacks: new RegExp(attacks) } : {}),
          parades: Number(valueOf('--parades') ?? 1),
        }
      : args.includes('--real-pages')
        ? { kind: 'real-pages', ...(rounds === undefined ? {} : { rounds: Number(rounds) }) }
        : soakN > 0 || soakMinutes > 0
          ? { kind: 'soak', length: soakMinutes > 0 ? { minutes: soakMinutes } : { requests: soakN } }
          : sweep !== undefined
            ? { kind: 'prewarm-sweep', counts: sweep.split(',').map(Number) }
            : { kind: 'compare' };
  const profile = args.includes('--profile');
  if (profile && run.kind !== 'compare' && run.kind !== 'help')
    throw new Error('--profile goes with the default run only');
  return { run, modes, profile, ...(outFile === undefined ? {} : { outFile }) };
}
