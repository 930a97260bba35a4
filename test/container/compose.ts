// compose.yaml's services as plain `podman run` arguments: what the scale test
// runs, so that compose.yaml stays true to what was run. Only the keys
// compose.yaml uses are known; any other fails the test instead of being
// dropped unseen (podman-compose 1.0.3 drops some silently, see docs/container.md).
import { isAbsolute, join } from 'node:path';
import { mustRun } from './podman.js';

export type ComposeService = Record<string, unknown>;

/** compose.yaml as PyYAML reads it (anchors and merge keys resolved), as JSON. */
export async function readCompose(file: string): Promise<Record<string, ComposeService>> {
  const out = await mustRun(
    'python3',
    ['-c', 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))', file],
    { timeoutMs: 30_000 },
  );
  return (JSON.parse(out) as { services: Record<string, ComposeService> }).services;
}

/** Compose's interpolation: ${X}, ${X:-default}, ${X:?error}, as podman-compose and Docker Compose do it. */
export function interpolate(text: string, vars: Readonly<Record<string, string | undefined>>): string {
  return text.replace(/\$\{(\w+)(?::-([^}]*)|:\?([^}]*))?\}/g, (_m, name: string, def?: string, err?: string) => {
    const v = vars[name];
    if (v !== undefined && v !== '') return v;
    if (err !== undefined) throw new Error(`compose.yaml: ${name}: ${err}`);
    return def ?? '';
  });
}

/** Keys the translation ignores, and why. */
const IGNORED = new Set([
  // The test builds the images itself and passes their tags.
  'build',
  // The test starts and stops the containers itself (that is what it tests).
  'restart',
  // The test starts the services in its own order.
  'depends_on',
]);

/**
 * `podman run` options for one service (without --name, --cgroup-parent or the
 * image), and the command after the image. The seccomp path is resolved
 * against root, as compose resolves it against the file's directory.
 */
export function runArgs(
  service: ComposeService,
  vars: Readonly<Record<string, string | undefined>>,
  root: string,
): { options: string[]; command: string[] } {
  const options: string[] = [];
  let command: string[] = [];
  const str = (v: unknown): string => interpolate(String(v), vars);
  for (const [key, value] of Object.entries(service)) {
    if (IGNORED.has(key)) continue;
    switch (key) {
      case 'network_mode':
        options.push(`--network=${str(value)}`);
        break;
      case 'mem_limit':
        options.push(`--memory=${str(value)}`);
        break;
      case 'memswap_limit':
        options.push(`--memory-swap=${str(value)}`);
        break;
      case 'pids_limit':
        options.push(`--pids-limit=${str(value)}`);
        break;
      case 'read_only':
        if (value === true) options.push('--read-only');
        break;
      case 'tmpfs':
        for (const t of value as string[]) options.push(`--tmpfs=${str(t)}`);
        break;
      case 'cap_drop':
        for (const c of value as string[]) options.push(`--cap-drop=${str(c)}`);
        break;
      case 'cap_add':
        for (const c of value as string[]) options.push(`--cap-add=${str(c)}`);
        break;
      case 'security_opt':
        for (const o of value as string[]) {
          const [name, arg = ''] = str(o).split(/:(.*)/s);
          if (name === 'seccomp') options.push(`--security-opt=seccomp=${isAbsolute(arg) ? arg : join(root, arg)}`);
          else if (name === 'no-new-privileges' && arg === 'true') options.push('--security-opt=no-new-privileges');
          else throw new Error(`compose.yaml: security_opt ${o} is not known to the test`);
        }
        break;
      case 'stop_grace_period': {
        const m = /^(\d+)s$/.exec(str(value));
        if (!m) throw new Error(`compose.yaml: stop_grace_period ${String(value)}: seconds expected`);
        options.push(`--stop-timeout=${m[1]}`);
        break;
      }
      case 'environment':
        for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
          const text = str(v ?? '');
          // Docker Compose passes a variable that interpolates to nothing as blank; the service treats blank as unset.
          if (text !== '') options.push(`--env=${name}=${text}`);
        }
        break;
      case 'command':
        command = (value as unknown[]).map((c) => str(c));
        break;
      default:
        throw new Error(`compose.yaml: ${key} is not known to the test; translate it in test/container/compose.ts`);
    }
  }
  return { options, command };
}
