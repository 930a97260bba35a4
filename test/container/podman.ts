// Podman for the container test, set up the way this kind of machine needs it:
// Debian's podman with runc (crun refuses a mixed cgroup v1/v2 layout), the
// cgroupfs manager, no default ulimits, all of it in a containers.conf of our own
// (CONTAINERS_CONF; /etc is never edited), and every container and build step
// kept inside a child of the test's own memory cgroup (--cgroup-parent), so
// podman never makes groups at the root of a hierarchy. What a run creates it
// removes: containers, its cgroups, its temporary files.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeKeyFile, type KeyRecord } from '../../src/front/tenancy/keyfile.js';

/**
 * Debian packages the tests need: the engine, its runtime, the base-image builder, a YAML parser,
 * podman-compose for compose.yaml, and catatonit (the init of the pod's infra container `podman kube play` makes).
 */
export const DEBIAN_PACKAGES = [
  'podman',
  'runc',
  'debootstrap',
  'python3-yaml',
  'podman-compose',
  'catatonit',
] as const;
/** What each package provides, as the test checks that it is there. */
const PROVIDED = [
  'podman',
  'runc',
  'debootstrap',
  '/usr/lib/python3/dist-packages/yaml/__init__.py',
  'podman-compose',
  '/usr/libexec/podman/catatonit',
] as const;

/** The image's one unprivileged user (Dockerfile: 10001), which the machine's root drops to. */
export const IMAGE_UID = 10001;
/**
 * The test's user namespaces: the container's uid 0 is this machine's uid USERNS_BASE, and it maps the
 * 65,536 uids a Kubernetes pod's namespace does (the slot users' 59000+ among them). None is a user here.
 */
export const USERNS_BASE = 1_000_000;
export const USERNS_SIZE = 65_536;
/** The start of the names of what the tests make (images, containers): CONTAINER_TEST_PREFIX, or pagescript. */
export const NAME_PREFIX = process.env.CONTAINER_TEST_PREFIX || 'pagescript';

/** A free TCP port on 127.0.0.1 (for a container on the host network). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const a = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof a !== 'object' || a === null) throw new Error('no port');
  return a.port;
}

/**
 * A key file in a directory of its own under dir (named `name`), owned by the image's user as this machine
 * sees it (`owner`: IMAGE_UID, or USERNS_BASE + IMAGE_UID for a container in the test's user namespace, whose
 * root reads it with DAC_OVERRIDE only if its owner is mapped there): mounted read-only as a directory, as
 * docs/container.md says (the file is replaced by a rename when keys change).
 */
export function keysDirectory(dir: string, keys: readonly KeyRecord[], owner = IMAGE_UID, name = 'keys'): string {
  const keysDir = join(dir, name);
  mkdirSync(keysDir);
  writeKeyFile(join(keysDir, 'pagescript-keys.json'), { version: 1, keys });
  chownSync(keysDir, owner, owner);
  chownSync(join(keysDir, 'pagescript-keys.json'), owner, owner);
  return keysDir;
}

/** Made from Debian's archive with debootstrap when missing; kept between runs as a cache. */
export const BASE_IMAGE = 'localhost/pagescript-debian:bookworm-slim';
/** Changing how the base is made changes this, so an old cached base is made again. */
const BASE_RECIPE =
  'debootstrap minbase bookworm; slim dpkg excludes, docs and locales; apt lists and cache emptied; v2';
const BASE_RECIPE_LABEL = 'io.pagescript.base-recipe';
const HOST_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
const BUILD_TIMEOUT_MS = 40 * 60_000;
/** How long close() waits for conmon to leave the groups it ran in. */
const CGROUP_REMOVE_DEADLINE_MS = 15_000;

export interface RunResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunOptions {
  readonly timeoutMs: number;
  readonly env?: NodeJS.ProcessEnv;
  readonly input?: NodeJS.ReadableStream;
  /** Passed on as it comes (a long build), besides being collected. */
  readonly echo?: boolean;
  readonly cwd?: string;
}

/** Runs a command with a deadline (SIGKILL when it passes); never throws on a non-zero exit. */
export function run(cmd: string, args: readonly string[], opts: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: [opts.input ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on('data', (b: Buffer) => {
      out.push(b);
      if (opts.echo) process.stderr.write(b);
    });
    child.stderr?.on('data', (b: Buffer) => {
      err.push(b);
      if (opts.echo) process.stderr.write(b);
    });
    if (opts.input && child.stdin) opts.input.pipe(child.stdin);
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
  });
}

/** Like run(), but throws with the command's last words when it does not exit 0. */
export async function mustRun(cmd: string, args: readonly string[], opts: RunOptions): Promise<string> {
  const r = await run(cmd, args, opts);
  if (r.code !== 0) {
    const why = r.signal === 'SIGKILL' ? `killed after ${opts.timeoutMs} ms` : `exit ${r.code ?? r.signal}`;
    throw new Error(`${cmd} ${args.join(' ')}: ${why}\n${r.stderr.slice(-4000)}${r.stdout.slice(-2000)}`);
  }
  return r.stdout;
}

function onPath(cmd: string): boolean {
  if (cmd.startsWith('/')) return existsSync(cmd);
  return (process.env.PATH ?? '/usr/bin:/bin').split(':').some((dir) => dir !== '' && existsSync(join(dir, cmd)));
}

/**
 * Makes sure podman and its helpers are installed. Returns undefined when they
 * are, or the reason the test cannot run here (then it skips, saying so). As
 * root on Debian they are installed with apt-get, so on this machine's kind the
 * test never skips: a failed install fails it.
 */
export async function ensureTools(): Promise<string | undefined> {
  if (process.platform !== 'linux') return `podman containers need Linux (this is ${process.platform})`;
  const missing = PROVIDED.filter((c) => !onPath(c));
  if (missing.length === 0) return undefined;
  const isRoot = process.getuid?.() === 0;
  if (!isRoot || !existsSync('/etc/debian_version') || !onPath('apt-get')) {
    return (
      `${missing.join(', ')} not installed, and this is not Debian as root, so the test cannot install ` +
      `them: install ${DEBIAN_PACKAGES.join(' ')} (or your system's equivalents) and run it again`
    );
  }
  process.stderr.write(`[container test] installing ${DEBIAN_PACKAGES.join(' ')} (apt-get)\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await mustRun('apt-get', ['update'], { env, timeoutMs: 5 * 60_000 });
  await mustRun('apt-get', ['install', '-y', '--no-install-recommends', ...DEBIAN_PACKAGES], {
    env,
    timeoutMs: 10 * 60_000,
  });
  const still = PROVIDED.filter((c) => !onPath(c));
  if (still.length > 0)
    throw new Error(`apt-get installed ${DEBIAN_PACKAGES.join(' ')} but ${still.join(', ')} missing`);
  return undefined;
}

/** One cgroup hierarchy: where it is mounted and where this process sits in it. */
interface Hierarchy {
  readonly mount: string;
  readonly path: string;
}

/** The hierarchies of /proc/self/cgroup with their mount points (v1 and v2). */
function hierarchies(): { memoryPath: string; all: Hierarchy[] } {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => {
      const [left = '', right = ''] = line.split(' - ');
      const f = left.split(' ');
      const [fstype = '', , options = ''] = right.split(' ');
      return { mount: f[4] ?? '', fstype, options: options.split(',') };
    })
    .filter((m) => m.fstype === 'cgroup' || m.fstype === 'cgroup2');
  let memoryPath: string | undefined;
  const all: Hierarchy[] = [];
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    const controllers = (m[2] ?? '').split(',').filter((c) => c !== '');
    const path = m[3] ?? '/';
    const mount =
      controllers.length === 0
        ? mounts.find((x) => x.fstype === 'cgroup2')
        : mounts.find((x) => x.fstype === 'cgroup' && controllers.every((c) => x.options.includes(c)));
    if (mount) all.push({ mount: mount.mount, path });
    if (controllers.includes('memory')) memoryPath = path;
  }
  // cgroup v2 alone: the one hierarchy holds the memory controller.
  if (memoryPath === undefined && all.length === 1) memoryPath = all[0]?.path;
  if (memoryPath === undefined) throw new Error('no memory cgroup in /proc/self/cgroup');
  return { memoryPath, all };
}

/**
 * A cgroup parent for this run's containers: a child of this process's own
 * memory cgroup. runc makes the same path in every hierarchy; remove() takes
 * away every directory of it that did not exist before, deepest first.
 */
export class CgroupParent {
  readonly path: string;
  readonly #created: string[] = [];

  constructor(name: string) {
    const { memoryPath, all } = hierarchies();
    // SECURITY: never the root of a hierarchy: podman's default (/libpod_parent) would be.
    this.path = `${memoryPath.replace(/\/$/, '')}/${name}`;
    for (const h of all) {
      const parts = this.path.split('/').filter((p) => p !== '');
      for (let i = 1; i <= parts.length; i++) {
        const dir = join(h.mount, ...parts.slice(0, i));
        if (!existsSync(dir)) this.#created.push(dir);
      }
    }
  }

  /**
   * Removes what runs under this parent made: the groups they left (conmon's,
   * emptied ones), deepest first. conmon may outlive its container by a moment,
   * so a busy group is tried again until it empties or the deadline passes.
   */
  async remove(deadlineMs = CGROUP_REMOVE_DEADLINE_MS): Promise<string[]> {
    const end = Date.now() + deadlineMs;
    for (;;) {
      const left = this.#removeOnce();
      if (left.length === 0 || Date.now() > end) return left;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  #removeOnce(): string[] {
    const left: string[] = [];
    const rmTree = (dir: string): void => {
      if (!existsSync(dir)) return;
      for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) rmTree(join(dir, e.name));
      try {
        rmdirSync(dir);
      } catch {
        left.push(dir);
      }
    };
    for (const dir of [...this.#created].sort((a, b) => b.length - a.length)) rmTree(dir);
    return left;
  }
}

/** Podman with our own containers.conf, in a directory of its own that close() removes. */
export class Podman {
  readonly dir: string;
  readonly env: NodeJS.ProcessEnv;
  readonly cgroup: CgroupParent;

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'pagescript-podman-'));
    const conf = join(this.dir, 'containers.conf');
    writeFileSync(
      conf,
      [
        '# Written by test/container/podman.ts for one test run.',
        '[containers]',
        "# No ulimits of podman's own: the machine's hard limits may be lower than its defaults.",
        'default_ulimits = []',
        'log_driver = "k8s-file"',
        '# --userns=auto (a pod with hostUsers: false) maps 65,536 uids, as Kubernetes does (podman: 1,024).',
        `userns_size = ${USERNS_SIZE}`,
        '[engine]',
        'cgroup_manager = "cgroupfs"',
        "# crun refuses this machine's mixed cgroup v1/v2 layout; runc works.",
        'runtime = "runc"',
        'events_logger = "file"',
        '',
      ].join('\n'),
    );
    this.env = { ...process.env, CONTAINERS_CONF: conf };
    this.cgroup = new CgroupParent(`pagescript-container-test-${process.pid}`);
  }

  /** The process holding the mount namespace podman runs in, when it needs subordinate ids (see below). */
  #holder: ChildProcess | undefined;

  /**
   * From here on, podman runs in a mount namespace of this run's own where /etc is a copy with a range of
   * USERNS_SIZE subordinate ids from USERNS_BASE for podman's `containers` user: what `--userns=auto` (and so
   * a pod's `hostUsers: false`) allocates from. SECURITY: this machine's /etc is never edited; the copy and its
   * mounts go with the namespace.
   */
  async withSubordinateIds(): Promise<void> {
    const etc = join(this.dir, 'etc');
    const range = `containers:${USERNS_BASE}:${USERNS_SIZE}\n`;
    const holder = spawn(
      'unshare',
      [
        '--mount',
        '--propagation',
        'slave',
        '--',
        '/bin/sh',
        '-c',
        'cp -a /etc "$1" && printf %s "$2" > "$1/subuid" && printf %s "$2" > "$1/subgid" && mount --bind "$1" /etc && echo ready && exec sleep infinity',
        'holder',
        etc,
        range,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.#holder = holder;
    await new Promise<void>((resolve, reject) => {
      let err = '';
      holder.stderr?.on('data', (d: Buffer) => (err += d.toString()));
      holder.stdout?.once('data', () => resolve());
      holder.once('exit', (code) => reject(new Error(`the mount namespace for podman ended (${code}): ${err}`)));
    });
  }

  #command(args: readonly string[]): [string, string[]] {
    return this.#holder?.pid === undefined
      ? ['podman', [...args]]
      : ['nsenter', [`--mount=/proc/${this.#holder.pid}/ns/mnt`, '--', 'podman', ...args]];
  }

  podman(args: readonly string[], opts: Omit<RunOptions, 'env'>): Promise<RunResult> {
    const [cmd, full] = this.#command(args);
    return run(cmd, full, { ...opts, env: this.env });
  }

  mustPodman(args: readonly string[], opts: Omit<RunOptions, 'env'>): Promise<string> {
    const [cmd, full] = this.#command(args);
    return mustRun(cmd, full, { ...opts, env: this.env });
  }

  /** Makes BASE_IMAGE from Debian's archive unless a base of the same recipe is there. */
  async ensureBaseImage(): Promise<void> {
    const r = await this.podman(
      ['image', 'inspect', '--format', `{{ index .Labels "${BASE_RECIPE_LABEL}" }}`, BASE_IMAGE],
      {
        timeoutMs: 60_000,
      },
    );
    if (r.code === 0 && r.stdout.trim() === BASE_RECIPE) return;
    process.stderr.write(`[container test] making ${BASE_IMAGE} with debootstrap (about a minute, cached after)\n`);
    const root = mkdtempSync(join('/var/tmp', 'pagescript-rootfs-'));
    try {
      const mirror = debianMirror();
      await mustRun('debootstrap', ['--variant=minbase', 'bookworm', root, ...(mirror ? [mirror.main] : [])], {
        timeoutMs: 15 * 60_000,
      });
      slimDown(root, mirror);
      const tar = spawn('tar', ['-C', root, '--numeric-owner', '-c', '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
      await this.mustPodman(
        [
          'import',
          '--change',
          `LABEL ${BASE_RECIPE_LABEL}="${BASE_RECIPE}"`,
          '--change',
          'CMD ["bash"]',
          '-',
          BASE_IMAGE,
        ],
        { timeoutMs: 10 * 60_000, input: tar.stdout },
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }

  /**
   * Builds a Dockerfile on BASE_IMAGE (podman's layer cache keeps a rebuild with
   * unchanged dependencies short); returns the seconds it took.
   */
  async build(tag: string, opts: { context: string; file?: string; echo?: boolean }): Promise<number> {
    const t0 = Date.now();
    await this.mustPodman(
      [
        'build',
        // HEALTHCHECK is a Docker image-format field; OCI images drop it.
        '--format=docker',
        // No build containers left behind when a step fails.
        '--force-rm',
        '--network=host',
        '--pull=never',
        `--cgroup-parent=${this.cgroup.path}`,
        `--build-arg=BASE=${BASE_IMAGE}`,
        // The machine's CA bundle, for npm behind a TLS-inspecting network (a build secret: in no layer).
        ...(existsSync(HOST_CA_BUNDLE) ? [`--secret=id=ca-certificates,src=${HOST_CA_BUNDLE}`] : []),
        ...(opts.file === undefined ? [] : [`--file=${opts.file}`]),
        `--tag=${tag}`,
        opts.context,
      ],
      { timeoutMs: BUILD_TIMEOUT_MS, echo: opts.echo ?? process.env.CONTAINER_TEST_VERBOSE === '1' },
    );
    return Math.round((Date.now() - t0) / 1000);
  }

  /** Removes the containers.conf directory and this run's cgroups; returns cgroups it could not remove. */
  async close(): Promise<string[]> {
    const holder = this.#holder;
    if (holder && holder.exitCode === null) {
      const gone = new Promise((r) => holder.once('exit', r));
      holder.kill('SIGKILL');
      await gone;
    }
    rmSync(this.dir, { recursive: true, force: true });
    return this.cgroup.remove();
  }
}

interface Mirror {
  readonly main: string;
  /** The machine's deb822 sources, reused in the image so it reaches the archive the same way. */
  readonly sources: string | undefined;
}

/** The Debian archive this machine's apt uses (its sources), so debootstrap reaches the same. */
function debianMirror(): Mirror | undefined {
  const deb822 = '/etc/apt/sources.list.d/debian.sources';
  if (existsSync(deb822)) {
    const text = readFileSync(deb822, 'utf8');
    const main = /^URIs:\s*(\S+)/m.exec(text)?.[1];
    if (main) return { main, sources: text };
  }
  if (existsSync('/etc/apt/sources.list')) {
    const main = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s/m.exec(
      readFileSync('/etc/apt/sources.list', 'utf8'),
    )?.[1];
    if (main) return { main, sources: undefined };
  }
  return undefined;
}

/** What the official slim image leaves out: documentation, manuals, translations, apt's lists and cache. */
function slimDown(root: string, mirror: Mirror | undefined): void {
  writeFileSync(
    join(root, 'etc/dpkg/dpkg.cfg.d/slim'),
    [
      'path-exclude /usr/share/doc/*',
      'path-include /usr/share/doc/*/copyright',
      'path-exclude /usr/share/man/*',
      'path-exclude /usr/share/info/*',
      'path-exclude /usr/share/locale/*',
      'path-include /usr/share/locale/locale.alias',
      '',
    ].join('\n'),
  );
  if (mirror?.sources) {
    writeFileSync(join(root, 'etc/apt/sources.list.d/debian.sources'), mirror.sources);
    rmSync(join(root, 'etc/apt/sources.list'), { force: true });
  }
  // What debootstrap installed before the excludes were in place.
  const keep = new Set(['partial', 'lock', 'locale.alias']);
  for (const dir of [
    'var/lib/apt/lists',
    'var/cache/apt/archives',
    'usr/share/man',
    'usr/share/info',
    'usr/share/locale',
  ]) {
    const p = join(root, dir);
    if (!existsSync(p)) continue;
    for (const e of readdirSync(p)) if (!keep.has(e)) rmSync(join(p, e), { recursive: true, force: true });
  }
  const docs = join(root, 'usr/share/doc');
  for (const pkg of existsSync(docs) ? readdirSync(docs) : []) {
    for (const e of readdirSync(join(docs, pkg)))
      if (e !== 'copyright') rmSync(join(docs, pkg, e), { recursive: true, force: true });
  }
  for (const p of ['var/cache/apt/pkgcache.bin', 'var/cache/apt/srcpkgcache.bin'])
    rmSync(join(root, p), { force: true });
}

/** What a client inside a container got: status 0 (and its error as text) when it could not ask at all. */
export interface InsideReply {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly text: string;
}

/**
 * A request to the service from a client in `container` (podman exec, the image's node), on the container's
 * own loopback port `port`, with `key`: a GET without a body, a JSON POST with one.
 */
export async function askInside(
  podman: Podman,
  container: string,
  opts: { readonly port: number; readonly key: string; readonly timeoutMs: number },
  path: string,
  body?: unknown,
): Promise<InsideReply> {
  const r = await podman.podman(
    [
      'exec',
      container,
      'node',
      '-e',
      `const [url, body, key] = process.argv.slice(1);
       fetch(url, body ? { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-key': key }, body } : {})
         .then(async (r) => console.log(JSON.stringify({ status: r.status, text: await r.text() })), (e) => { console.error(String(e)); process.exit(1); });`,
      `http://127.0.0.1:${opts.port}${path}`,
      body === undefined ? '' : JSON.stringify(body),
      opts.key,
    ],
    { timeoutMs: opts.timeoutMs },
  );
  if (r.code !== 0) return { status: 0, body: {}, text: r.stderr };
  const { status, text } = JSON.parse(r.stdout) as { status: number; text: string };
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON
  }
  return { status, body: parsed, text };
}

/** A container's processes as podman top lists them: each one's user in it, its uid on this machine, its command. */
export interface Processes {
  readonly text: string;
  readonly rows: readonly { readonly user: string; readonly huser: string; readonly args: string }[];
  /** The users of the processes whose command matches. */
  usersOf(command: RegExp): string[];
}

export async function processesOf(podman: Podman, container: string, timeoutMs: number): Promise<Processes> {
  const text = await podman.mustPodman(['top', container, 'user', 'huser', 'args'], { timeoutMs });
  const rows = text
    .trim()
    .split('\n')
    .slice(1)
    .map((row) => row.trim().split(/\s+/))
    .map(([user = '', huser = '', ...args]) => ({ user, huser, args: args.join(' ') }));
  return {
    text,
    rows,
    usersOf: (command) => [...new Set(rows.filter((r) => command.test(r.args)).map((r) => r.user))],
  };
}
