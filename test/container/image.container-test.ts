// The container image, built from the repo's Dockerfile and run for real with
// podman: `npm run test:container` (CI runs it after `npm test`; it is not part
// of `npm test`, whose runner picks up *.test.ts only).
//
// It prepares what it needs (podman, runc, debootstrap, podman-compose from
// Debian; a debian:bookworm-slim stand-in made with debootstrap, cached as
// BASE_IMAGE), builds the image (podman's layer cache keeps a rebuild with
// unchanged dependencies short), and runs it as a self-hoster would: read-only
// root file system with a small tmpfs, the seccomp profile of deploy/, a 1 GiB
// memory limit, as root of a user namespace of its own with only the
// capabilities docs/container.md lists. That container shares the host's
// network so that every byte stays on 127.0.0.1 (and so has no kernel lock: it
// owns no network namespace). A second one, in a network namespace of its own
// with NET_ADMIN, is driven from inside (podman exec): the kernel lock, slot
// users apart, each slot's privacy. A third is started as Docker starts an
// image: the machine's root, which drops to the image's one user.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { CHROMIUM_PATHS, loadConfig } from '../../src/common/config.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../helpers/fixtures.js';
import { until } from '../helpers/wait.js';
import { hashKey } from '../../src/front/tenancy/keyfile.js';
import { slotTmpMb } from '../../src/front/host/slot-privacy.js';
import { PROFILE_PREFIX } from '../../src/slot/browser/chromium-process.js';
import {
  IMAGE_UID,
  NAME_PREFIX,
  Podman,
  USERNS_BASE,
  USERNS_SIZE,
  askInside,
  ensureTools,
  freePort,
  keysDirectory,
  mustRun,
  processesOf,
  run,
  type InsideReply,
} from './podman.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const IMAGE = `localhost/${NAME_PREFIX}:container-test`;
const NAME = `${NAME_PREFIX}-container-test-${process.pid}`;
const KEY = 'container-test-key-0123456789';
/** The container's memory limit: what a small self-hosted instance might get. */
const MEMORY_LIMIT = '1g';
const SECCOMP_PROFILE = join(ROOT, 'deploy', 'seccomp-chromium.json');
/** The container's cap on processes and threads, as compose.yaml sets it. */
const PIDS_LIMIT = 4096;
/** The service's own shutdown grace (SHUTDOWN_GRACE_MS), and podman's wait before SIGKILL, well beyond it. */
const SHUTDOWN_GRACE_MS = 10_000;
const STOP_TIMEOUT_S = 60;
const START_TIMEOUT_MS = 180_000;
const PODMAN_TIMEOUT_MS = 120_000;

/**
 * What every run of the image shares, as docs/container.md tells a self-hoster: a read-only root, a small
 * /tmp, a memory and a task cap. SECURITY: the seccomp profile differs from podman's default only in letting
 * Chromium's sandbox chroot.
 */
function common(memory = MEMORY_LIMIT): string[] {
  return [
    '--read-only',
    '--tmpfs=/tmp:rw,nosuid,nodev,size=512m,mode=1777',
    `--security-opt=seccomp=${SECCOMP_PROFILE}`,
    `--memory=${memory}`,
    `--memory-swap=${memory}`,
    // SECURITY: a fork bomb from escaped code stops here, whatever the slots' own caps.
    `--pids-limit=${PIDS_LIMIT}`,
  ];
}

/**
 * The capabilities the image needs as root of its own user namespace (docs/container.md): switching the slots
 * and the egress process to their users, signalling them, the files it makes for them; SYS_ADMIN for each
 * slot's mount namespace (its private /tmp) and, with SYS_CHROOT, for Chromium's SUID sandbox helper.
 * NET_ADMIN (the kernel lock) only where the container has a network namespace of its own.
 */
const USERNS_CAPS = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETUID', 'SYS_ADMIN', 'SYS_CHROOT'];

/**
 * Root of a user namespace of its own (podman --userns=auto or a map, Kubernetes hostUsers: false).
 * SECURITY: no_new_privs is not set: Chromium's SUID helper must run, and a set-uid file gains at most
 * root of this namespace with the capabilities below.
 */
function ownUserNamespace(extraCaps: readonly string[] = []): string[] {
  return [
    `--uidmap=0:${USERNS_BASE}:${USERNS_SIZE}`,
    `--gidmap=0:${USERNS_BASE}:${USERNS_SIZE}`,
    '--cap-drop=ALL',
    `--cap-add=${[...USERNS_CAPS, ...extraCaps].join(',')}`,
  ];
}

/**
 * As Docker starts an image by default: the machine's root, no user namespace. SECURITY: it keeps only
 * what it needs to drop to the image's user at once, and no set-uid file gives anything back.
 */
function machineRoot(): string[] {
  return ['--cap-drop=ALL', '--cap-add=KILL,SETGID,SETUID', '--security-opt=no-new-privileges'];
}

const skip = await ensureTools();
if (skip !== undefined) process.stderr.write(`[container test] SKIPPED: ${skip}\n`);

describe('the container image', { skip }, () => {
  let podman: Podman;
  let port = 0;
  let started = false;
  const fixtures = new FixtureServer({ '/page': html(EXAMPLE_DOMAIN_HTML) });
  /** A loopback server that nobody may reach: it is not on the allow-list. */
  const canary = new FixtureServer({ '/': html('<title>canary</title>') });

  const api = async (
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown>; text: string }> => {
    const r = await request(`http://127.0.0.1:${port}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-key': KEY },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      headersTimeout: 60_000,
      bodyTimeout: 60_000,
    });
    const text = await r.body.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // not JSON
    }
    return { status: r.statusCode, body: parsed, text };
  };

  const inspect = async (format: string): Promise<string> =>
    (await podman.mustPodman(['inspect', '--format', format, NAME], { timeoutMs: PODMAN_TIMEOUT_MS })).trim();

  before(async () => {
    podman = new Podman();
    await podman.ensureBaseImage();
    const seconds = await podman.build(IMAGE, { context: ROOT });
    process.stderr.write(`[container test] image built in ${seconds} s\n`);
    await fixtures.start();
    await canary.start();
    port = await freePort();
    // The key file on a read-only volume, as docs/container.md says.
    const keysDir = keysDirectory(
      podman.dir,
      [{ name: 'container-test', sha256: hashKey(KEY), active: true }],
      USERNS_BASE + IMAGE_UID,
    );
    await podman.mustPodman(
      [
        'run',
        '--detach',
        '--pull=never',
        `--name=${NAME}`,
        `--cgroup-parent=${podman.cgroup.path}`,
        // SECURITY: the host's network so that the test's traffic never leaves 127.0.0.1;
        // HOST=127.0.0.1 keeps the service off the machine's other interfaces.
        '--network=host',
        ...common(),
        ...ownUserNamespace(),
        '--env=HOST=127.0.0.1',
        `--env=PORT=${port}`,
        `--volume=${keysDir}:/etc/pagescript:ro`,
        '--env=API_KEYS_FILE=/etc/pagescript/pagescript-keys.json',
        `--env=EGRESS_ALLOWLIST=${fixtures.allowEntry}`,
        `--env=SHUTDOWN_GRACE_MS=${SHUTDOWN_GRACE_MS}`,
        '--env=LOG_LEVEL=info',
        IMAGE,
      ],
      { timeoutMs: PODMAN_TIMEOUT_MS },
    );
    started = true;
  });

  after(async () => {
    try {
      if (started) await podman.podman(['rm', '--force', '--time=0', NAME], { timeoutMs: PODMAN_TIMEOUT_MS });
      await canary.close();
      await fixtures.close();
    } finally {
      const left = await podman.close();
      assert.deepEqual(left, [], `cgroups this test made and could not remove: ${left.join(', ')}`);
    }
  });

  test('the image health check passes once the service is ready', async () => {
    // `podman healthcheck run` runs the image's own HEALTHCHECK command in the container.
    await until(
      async () => (await podman.podman(['healthcheck', 'run', NAME], { timeoutMs: PODMAN_TIMEOUT_MS })).code === 0,
      'the HEALTHCHECK to pass',
      { timeoutMs: START_TIMEOUT_MS, everyMs: 1000 },
    );
    assert.equal(await inspect('{{.State.Health.Status}}'), 'healthy');
    const r = await api('/health');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.browser, 'ready');
    // Where /health reports Chromium's sandbox, it must be on in the image (it runs under deploy/'s profile).
    if ('chromiumSandbox' in r.body) assert.equal(r.body.chromiumSandbox, true, r.text);
    // On the host's network the container owns no network namespace: no kernel lock, and /health says why.
    assert.equal(r.body.kernelLock, 'off: no NET_ADMIN', r.text);
    // Root of its own user namespace: the one slot (1 GiB) runs as its user, private and non-dumpable as on a host.
    assert.deepEqual(r.body.slotUsers, ['pagescript-slot-0'], r.text);
    assert.equal(r.body.slotPrivateTmp, 'on', r.text);
    assert.equal(r.body.slotNonDumpable, 'on', r.text);
    // cgroup v1 here, which podman does not delegate to a container: the watchdogs hold memory (docs/budgets.md).
    assert.match(String(r.body.slotCgroups), /^off: .+/, r.text);
  });

  test("the service runs as root of the container's user namespace, each child as its own user, none as this machine's root", async () => {
    assert.equal(await inspect('{{.Config.User}}'), '');
    const { text: top, rows, usersOf: of } = await processesOf(podman, NAME, PODMAN_TIMEOUT_MS);
    assert.deepEqual(of(/dist\/server\.js/), ['root'], top);
    assert.deepEqual(of(/egress-process\.js/), ['pagescript-egress'], top);
    assert.deepEqual(of(/slot\.js|chromium-headless-shell/), ['pagescript-slot-0'], top);
    // SECURITY: every process is a uid of the container's namespace on this machine, its root included.
    for (const r of rows) {
      const uid = Number(r.huser);
      assert.ok(uid >= USERNS_BASE && uid < USERNS_BASE + USERNS_SIZE, `${r.args}: host uid ${r.huser}\n${top}`);
    }
  });

  test('the service takes its concurrency from the container memory limit, not the machine', async () => {
    const logs = await podman.mustPodman(['logs', NAME], { timeoutMs: PODMAN_TIMEOUT_MS });
    const listening = logs
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'pagescript listening');
    assert.ok(listening, logs);
    // ~1 GiB per script by default: one at a time in 1 GiB, though the machine has 2 cores and far more memory.
    assert.equal(listening.maxConcurrency, 1, logs);
  });

  test('a script scrapes a page served on 127.0.0.1 of the host (allow-listed)', async () => {
    const r = await api('/api/scrape', {
      url: fixtures.url('/page'),
      script: 'const $ = cheerio.load(await page.content()); return { title: await page.title(), h1: $("h1").text() }',
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, { title: 'Example Domain', h1: 'Example Domain' });
    assert.equal(fixtures.hits.get('/page'), 1);
  });

  test('a loopback address not on the allow-list is refused', async () => {
    const r = await api('/api/scrape', { url: canary.url('/') });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'SCRAPING_FAILED');
    assert.match(String(r.body.error), /address not allowed/);
    assert.equal(canary.hits.size, 0);
  });

  test('a script memory bomb is MEMORY_LIMIT_EXCEEDED and the container lives on', async () => {
    const r = await api('/api/scrape', {
      url: fixtures.url('/page'),
      script: 'const a = []; while (true) a.push(new Array(1e5).fill(Math.random()))',
    });
    assert.equal(r.body.code, 'MEMORY_LIMIT_EXCEEDED', r.text);
    await assertStillServing();
  });

  test('a page memory bomb ends its request, no process is OOM-killed, and the next request works', async () => {
    const r = await api('/api/scrape', {
      url: fixtures.url('/page'),
      script:
        'return await page.evaluate(() => { const a = []; while (true) a.push(new Array(1e6).fill(Math.random())) })',
    });
    assert.equal(r.status, 400, r.text);
    // PAGE_MEMORY_MB (512 by default) ends the page before the container's limit is reached.
    assert.equal(r.body.code, 'MEMORY_LIMIT_EXCEEDED', r.text);
    assert.match(String(r.body.error), /PAGE_MEMORY_MB/);
    await assertStillServing();
    assert.equal(await inspect('{{.State.OOMKilled}}'), 'false');
    // The kernel's count of OOM kills in the container's memory cgroup (v1: memory.oom_control).
    const cgroup = await inspect('{{.State.CgroupPath}}');
    const oom = readFileSync(join('/sys/fs/cgroup/memory', cgroup, 'memory.oom_control'), 'utf8');
    assert.match(oom, /^oom_kill 0$/m, oom);
  });

  test("Chromium's own sandbox starts in the image under deploy/seccomp-chromium.json", async () => {
    const r = await chromiumSandboxed([`--security-opt=seccomp=${SECCOMP_PROFILE}`]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /<p id="s">sandboxed<\/p>/);
  });

  test("without the profile, podman's default seccomp refuses Chromium's sandbox when capabilities are dropped", async () => {
    const r = await chromiumSandboxed([]);
    assert.notEqual(r.code, 0, r.stdout);
    // The step the profile allows: the sandbox chroots each renderer into an empty directory.
    assert.match(r.stderr, /Check failed: sys_chroot/);
  });

  test('SIGTERM stops the container cleanly within the grace period', async () => {
    const t0 = Date.now();
    // podman stop sends the image's stop signal (SIGTERM) to tini, which passes it to node.
    await podman.mustPodman(['stop', `--time=${STOP_TIMEOUT_S}`, NAME], { timeoutMs: PODMAN_TIMEOUT_MS });
    const ms = Date.now() - t0;
    // 0: the service's own shutdown finished (past SHUTDOWN_GRACE_MS and its margin it exits 1),
    // and podman did not have to SIGKILL it (137).
    assert.equal(await inspect('{{.State.ExitCode}}'), '0', `stopped in ${ms} ms`);
    const logs = await podman.mustPodman(['logs', NAME], { timeoutMs: PODMAN_TIMEOUT_MS });
    assert.match(logs, /"signal":"SIGTERM".*"msg":"shutting down"/);
    assert.match(logs, /"msg":"shut down"/);
  });

  async function assertStillServing(): Promise<void> {
    assert.equal(await inspect('{{.State.Running}}'), 'true');
    const r = await api('/api/scrape', { url: fixtures.url('/page'), script: 'return await page.title()' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data, 'Example Domain');
  }

  /** Chromium run by hand in a fresh container of the image, hardened as the service's, with its sandbox on. */
  async function chromiumSandboxed(seccomp: string[]): ReturnType<Podman['podman']> {
    // As the image's user with no capabilities (how the machine's root runs it, after its drop): Chromium's own
    // namespace sandbox, which the profile must let it make.
    const options = [
      ...common().filter((o) => !o.startsWith('--security-opt=seccomp=')),
      '--cap-drop=ALL',
      '--security-opt=no-new-privileges',
      `--user=${IMAGE_UID}:${IMAGE_UID}`,
    ];
    // The browser the image's service runs: PUPPETEER_EXECUTABLE_PATH if the image sets it, else the one its
    // CHROMIUM setting names (package.json's paths, as src/common/config.ts reads them).
    const env = await podman.mustPodman(
      ['image', 'inspect', '--format', '{{range .Config.Env}}{{println .}}{{end}}', IMAGE],
      {
        timeoutMs: PODMAN_TIMEOUT_MS,
      },
    );
    const mode = /^CHROMIUM=(.+)$/m.exec(env)?.[1] === 'full' ? 'full' : 'shell';
    const chromium = /^PUPPETEER_EXECUTABLE_PATH=(.+)$/m.exec(env)?.[1] ?? CHROMIUM_PATHS[mode];
    return podman.podman(
      [
        'run',
        '--rm',
        '--pull=never',
        `--cgroup-parent=${podman.cgroup.path}`,
        '--network=none',
        ...options,
        ...seccomp,
        IMAGE,
        chromium,
        '--headless',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--dump-dom',
        'data:text/html,<p id="s">sandboxed</p>',
      ],
      { timeoutMs: PODMAN_TIMEOUT_MS },
    );
  }
});

/** The second container: its own network namespace, so the kernel lock is its own; driven from inside. */
const NETNS_NAME = `${NAME_PREFIX}-container-test-netns-${process.pid}`;
/** The service's port and a page server's, on the container's own 127.0.0.1. */
const INNER_PORT = 3000;
const INNER_PAGE_PORT = 8081;
/** Two slots in 2 GiB: PAGE_MEMORY_MB and SCRIPT_MEMORY_MB lowered so that both fit the memory plan. */
const INNER_MEMORY = '2g';
const INNER_PAGE_MEMORY_MB = 256;
const SLOT_USERS = ['pagescript-slot-0', 'pagescript-slot-1'];
const MiB = 2 ** 20;

interface Proc {
  readonly pid: number;
  readonly uid: number;
  readonly cmd: string;
}
interface Attempt {
  readonly environ: string;
  readonly mem: string;
  readonly signal: string;
}
interface Seen {
  readonly me: number;
  readonly own: Attempt;
  readonly slots: ReadonlyArray<{ readonly uid: number; readonly procs: ReadonlyArray<Proc & Attempt> }>;
}

/**
 * Run as a user in the container: every slot process's tree (its Chromium's processes included), and what this
 * user gets reading each one's environment and memory (ptrace-mode reads) and signalling it; the control is a
 * process of its own. Node is the image's only interpreter.
 */
const PROBE = `
const fs = require('fs');
const { spawn } = require('child_process');
const procs = fs.readdirSync('/proc').filter((d) => /^\\d+$/.test(d)).map(Number).flatMap((pid) => {
  try {
    const st = fs.readFileSync('/proc/' + pid + '/stat', 'utf8');
    const ppid = Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]);
    const uid = Number(/^Uid:\\s+(\\d+)/m.exec(fs.readFileSync('/proc/' + pid + '/status', 'utf8'))[1]);
    const cmd = fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8').split('\\0').join(' ');
    return [{ pid, ppid, uid, cmd }];
  } catch { return []; }
});
const tree = (root) => { const out = [root]; for (let i = 0; i < out.length; i++) for (const p of procs) if (p.ppid === out[i].pid) out.push(p); return out; };
const attempt = (pid) => {
  const got = {};
  for (const f of ['environ', 'mem']) {
    try { const fd = fs.openSync('/proc/' + pid + '/' + f, 'r'); if (f === 'environ') fs.readSync(fd, Buffer.alloc(1)); fs.closeSync(fd); got[f] = 'ok'; }
    catch (e) { got[f] = e.code; }
  }
  try { process.kill(pid, 0); got.signal = 'ok'; } catch (e) { got.signal = e.code; }
  return got;
};
const own = spawn('/bin/sleep', ['30']);
setTimeout(() => {
  const slots = procs.filter((p) => /dist\\/slot\\.js/.test(p.cmd) && p.uid !== 0)
    .map((s) => ({ uid: s.uid, procs: tree(s).map((p) => ({ pid: p.pid, uid: p.uid, cmd: p.cmd.slice(0, 100), ...attempt(p.pid) })) }));
  console.log(JSON.stringify({ me: process.getuid(), own: attempt(own.pid), slots }));
  own.kill('SIGKILL');
}, 200);
`;

/**
 * Run as a user in the container: where its TCP and UDP reach on the container's loopback: a port the egress
 * guard listens on (found in /proc/net/tcp, in EGRESS_PORTS), the front's, the page server's.
 */
const REACH = `
const fs = require('fs'), net = require('net'), dgram = require('dgram');
const [first, last, front, page] = process.argv.slice(1).map(Number);
const listening = fs.readFileSync('/proc/net/tcp', 'utf8').split('\\n').slice(1).map((l) => l.trim().split(/\\s+/))
  .filter((f) => f[3] === '0A' && f[1] && f[1].startsWith('0100007F:')).map((f) => parseInt(f[1].split(':')[1], 16));
const guard = listening.find((p) => p >= first && p <= last);
const tcp = (port) => new Promise((r) => { const s = net.connect(port, '127.0.0.1'); s.on('connect', () => { s.destroy(); r('connected'); }); s.on('error', (e) => r(e.code)); });
const udp = () => new Promise((r) => { const s = dgram.createSocket('udp4'); s.send('x', page, '127.0.0.1', (e) => { s.close(); r(e ? e.code : 'sent'); }); });
(async () => console.log(JSON.stringify({ guard: guard === undefined ? 'no guard port' : await tcp(guard), front: await tcp(front), page: await tcp(page), udp: await udp() })))();
`;

describe(
  'the image in a network namespace of its own, as root of its own user namespace with NET_ADMIN',
  { skip },
  () => {
    let podman: Podman;
    let started = false;
    const guardPorts = loadConfig({}).egressPorts;

    const exec = (args: readonly string[], user?: string): ReturnType<Podman['podman']> =>
      podman.podman(['exec', ...(user === undefined ? [] : [`--user=${user}`]), NETNS_NAME, ...args], {
        timeoutMs: PODMAN_TIMEOUT_MS,
      });

    /** A request from a client on the container's own loopback. */
    const api = async (path: string, body?: unknown): Promise<InsideReply> => {
      const r = await askInside(
        podman,
        NETNS_NAME,
        { port: INNER_PORT, key: KEY, timeoutMs: PODMAN_TIMEOUT_MS },
        path,
        body,
      );
      assert.notEqual(r.status, 0, r.text);
      return r;
    };

    const probe = async (user: string): Promise<Seen> => {
      const r = await exec(['node', '-e', PROBE], user);
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout) as Seen;
    };

    /** A request whose script waits, so that its slot's Chromium has a page open meanwhile; its slot's processes. */
    const during = async <T>(fn: (busy: Seen['slots'][number]) => Promise<T>): Promise<T> => {
      const running = api('/api/scrape', {
        url: `http://127.0.0.1:${INNER_PAGE_PORT}/`,
        script: 'await new Promise((r) => setTimeout(r, 8000)); return await page.title()',
      });
      let busy: Seen['slots'][number] | undefined;
      await until(
        async () => {
          busy = (await probe('pagescript')).slots.find((s) => s.procs.some((p) => p.cmd.includes('--type=renderer')));
          return busy !== undefined;
        },
        "the request's page to have its renderer",
        { timeoutMs: 60_000, everyMs: 250 },
      );
      const out = await fn(busy as Seen['slots'][number]);
      const r = await running;
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data, 'Example Domain');
      return out;
    };

    before(async () => {
      podman = new Podman();
      await podman.ensureBaseImage();
      await podman.build(IMAGE, { context: ROOT });
      const keysDir = keysDirectory(
        podman.dir,
        [{ name: 'container-test', sha256: hashKey(KEY), active: true }],
        USERNS_BASE + IMAGE_UID,
      );
      await podman.mustPodman(
        [
          'run',
          '--detach',
          '--pull=never',
          `--name=${NETNS_NAME}`,
          `--cgroup-parent=${podman.cgroup.path}`,
          // SECURITY: a network namespace with nothing but its own loopback: no traffic leaves it, and the kernel
          // lock's table is made there, never in this machine's ruleset.
          '--network=none',
          ...common(INNER_MEMORY),
          // SYS_PTRACE is the test's own, for its root to enter a slot's mount namespace (nsenter) and read its
          // /tmp: the slots' processes (what is tried here) hold no capability whatever the container's.
          ...ownUserNamespace(['NET_ADMIN', 'SYS_PTRACE']),
          '--env=HOST=127.0.0.1',
          `--env=PORT=${INNER_PORT}`,
          `--volume=${keysDir}:/etc/pagescript:ro`,
          '--env=API_KEYS_FILE=/etc/pagescript/pagescript-keys.json',
          `--env=EGRESS_ALLOWLIST=127.0.0.1:${INNER_PAGE_PORT}`,
          '--env=MAX_CONCURRENCY=2',
          `--env=PAGE_MEMORY_MB=${INNER_PAGE_MEMORY_MB}`,
          '--env=SCRIPT_MEMORY_MB=128',
          // Both slot processes stay up, so that one slot's user can be tried against the other's processes.
          '--env=IDLE_SLOT_CLOSE_MS=0',
          `--env=SHUTDOWN_GRACE_MS=${SHUTDOWN_GRACE_MS}`,
          '--env=LOG_LEVEL=info',
          IMAGE,
        ],
        { timeoutMs: PODMAN_TIMEOUT_MS },
      );
      started = true;
      // The page, served on the container's own loopback by a process of the image's user.
      await podman.mustPodman(
        [
          'exec',
          '--detach',
          `--user=${IMAGE_UID}`,
          NETNS_NAME,
          'node',
          '-e',
          `require('node:http').createServer((q, s) => { s.writeHead(200, { 'content-type': 'text/html' }); s.end(process.argv[1]); }).listen(${INNER_PAGE_PORT}, '127.0.0.1')`,
          EXAMPLE_DOMAIN_HTML,
        ],
        { timeoutMs: PODMAN_TIMEOUT_MS },
      );
      await until(
        async () => (await api('/health').catch(() => ({ status: 0 }))).status === 200,
        'the service to be ready',
        {
          timeoutMs: START_TIMEOUT_MS,
          everyMs: 1000,
        },
      );
    });

    after(async () => {
      try {
        if (started) await podman.podman(['rm', '--force', '--time=0', NETNS_NAME], { timeoutMs: PODMAN_TIMEOUT_MS });
      } finally {
        const left = await podman.close();
        assert.deepEqual(left, [], `cgroups this test made and could not remove: ${left.join(', ')}`);
      }
    });

    test('the kernel lock is on, each slot has a user of its own, its own /tmp, and is not dumpable; a scrape works', async () => {
      const h = await api('/health');
      assert.equal(h.status, 200, h.text);
      assert.equal(h.body.kernelLock, 'on', h.text);
      assert.deepEqual(h.body.slotUsers, SLOT_USERS, h.text);
      assert.equal(h.body.slotPrivateTmp, 'on', h.text);
      assert.equal(h.body.slotNonDumpable, 'on', h.text);
      assert.equal(h.body.chromiumSandbox, true, h.text);
      assert.match(String(h.body.slotCgroups), /^off: .+/, h.text);
      const r = await api('/api/scrape', {
        url: `http://127.0.0.1:${INNER_PAGE_PORT}/`,
        script: 'return await page.title()',
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data, 'Example Domain');
      // The table is the container's: this machine's ruleset has none of this service's (its pid is the container's).
      const logs = await podman.mustPodman(['logs', NETNS_NAME], { timeoutMs: PODMAN_TIMEOUT_MS });
      assert.match(logs, /"kernelLock":"on"/, logs);
    });

    test("no set-uid or set-gid file in the image but Chromium's sandbox helper", async () => {
      // SECURITY: no_new_privs is off here (the helper must run): any other such file would be a slot user's too.
      const r = await exec(['find', '/', '-xdev', '-type', 'f', '-perm', '/6000']);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(r.stdout.trim().split('\n'), ['/usr/lib/chromium/chrome-sandbox'], r.stdout);
    });

    test("a slot's user reaches the egress guard's ports and nothing else on loopback, TCP or UDP (the image's user, the control, reaches all)", async () => {
      const args = [String(guardPorts.first), String(guardPorts.last), String(INNER_PORT), String(INNER_PAGE_PORT)];
      const reach = async (user: string): Promise<Record<string, string>> => {
        const r = await exec(['node', '-e', REACH, ...args], user);
        assert.equal(r.code, 0, r.stderr);
        return JSON.parse(r.stdout) as Record<string, string>;
      };
      assert.deepEqual(await reach('pagescript'), {
        guard: 'connected',
        front: 'connected',
        page: 'connected',
        udp: 'sent',
      });
      for (const user of SLOT_USERS) {
        const got = await reach(user);
        assert.equal(got.guard, 'connected', `${user}: ${JSON.stringify(got)}`);
        assert.equal(got.front, 'ECONNREFUSED', `${user}: ${JSON.stringify(got)}`);
        assert.equal(got.page, 'ECONNREFUSED', `${user}: ${JSON.stringify(got)}`);
        assert.notEqual(got.udp, 'sent', `${user}: ${JSON.stringify(got)}`);
      }
    });

    test("beside a running request, no slot's user reads the memory or environment of its own slot's processes or Chromium's, nor touches the other slot's", async () => {
      await during(async (busy) => {
        assert.ok(busy.procs.filter((p) => /chrom/.test(p.cmd)).length >= 3, JSON.stringify(busy.procs));
        for (const user of SLOT_USERS) {
          const seen = await probe(user);
          // Control: the same reads reach a process of this user that is not a slot's.
          assert.deepEqual(seen.own, { environ: 'ok', mem: 'ok', signal: 'ok' }, user);
          assert.equal(seen.slots.length, 2, JSON.stringify(seen.slots));
          assert.equal(new Set(seen.slots.map((s) => s.uid)).size, 2, 'the two slots run as two users');
          for (const slot of seen.slots)
            for (const p of slot.procs) {
              const expected = { environ: 'EACCES', mem: 'EACCES' };
              assert.deepEqual({ environ: p.environ, mem: p.mem }, expected, `${user} on ${p.pid} (${p.cmd})`);
              // SECURITY: another slot's processes are another user's: no signal either.
              if (slot.uid !== seen.me) assert.equal(p.signal, 'EPERM', `${user} signals ${p.pid} (${p.cmd})`);
            }
        }
      });
    });

    test("a slot's user writing 1 GiB to /dev/shm is refused at its slot's bound, and nothing it wrote is there for the next request nor outside its slot", async () => {
      const marker = `left-${process.pid}`;
      const slotProc = await during(async (busy) => {
        const slot = busy.procs[0] as Proc;
        // As escaped code is: a process of the slot's user in the slot's mount namespace, while its request runs.
        const w = await exec([
          'nsenter',
          `--target=${slot.pid}`,
          '--mount',
          `--setuid=${slot.uid}`,
          `--setgid=${slot.uid}`,
          '--',
          '/bin/sh',
          '-c',
          `dd if=/dev/zero of=/dev/shm/${marker} bs=1M count=1024 2>&1
         echo x > /tmp/${marker}.tmp; echo x > /var/tmp/${marker}.var
         stat -c 'size=%s' /dev/shm/${marker}`,
        ]);
        const out = `${w.stdout}${w.stderr}`;
        assert.match(out, /No space left on device/, out);
        const size = Number(/size=(\d+)/.exec(out)?.[1]);
        const bound = slotTmpMb(INNER_PAGE_MEMORY_MB) * MiB;
        assert.ok(size > bound / 2 && size <= bound, `${size} bytes written, the bound is ${bound}`);
        const there = await exec(['ls', '-a', `/proc/${slot.pid}/root/tmp`]);
        assert.match(there.stdout, new RegExp(marker), "control: it is in the slot's tmpfs (/dev/shm is /tmp there)");
        return slot;
      });
      // The container's own /tmp, /var/tmp and /dev/shm never saw it.
      const outside = await exec(['sh', '-c', `ls -a /tmp /var/tmp /dev/shm`]);
      assert.doesNotMatch(outside.stdout, new RegExp(marker), outside.stdout);
      // Emptied once its job ended, but for the live Chromium's profile: before the next request. Or the slot
      // process is gone, and its tmpfs with its mount namespace: the refusals the reach test above provoked as
      // the slot's user are signs of an escape, read at a job's end, and replace the slot.
      await until(
        async () => {
          const ls = await exec(['ls', '-A', `/proc/${slotProc.pid}/root/tmp`]);
          if (ls.code !== 0) return (await exec(['test', '-e', `/proc/${slotProc.pid}`])).code !== 0;
          return ls.stdout
            .trim()
            .split('\n')
            .every((n) => n.startsWith(PROFILE_PREFIX));
        },
        "the slot's tmpfs to hold only its Chromium's profile",
        { timeoutMs: 30_000, everyMs: 250 },
      );
    });
  },
);

describe("the image started as the machine's root (Docker's default: no user namespace)", { skip }, () => {
  let podman: Podman;
  const name = `${NAME_PREFIX}-container-test-root-${process.pid}`;

  before(async () => {
    podman = new Podman();
    await podman.ensureBaseImage();
    await podman.build(IMAGE, { context: ROOT });
  });

  after(async () => {
    try {
      await podman.podman(['rm', '--force', '--time=0', name], { timeoutMs: PODMAN_TIMEOUT_MS });
    } finally {
      const left = await podman.close();
      assert.deepEqual(left, [], `cgroups this test made and could not remove: ${left.join(', ')}`);
    }
  });

  test("it drops to the image's one user before anything runs: every process but tini is that user, and /health says why slots share it", async () => {
    const keysDir = keysDirectory(podman.dir, [{ name: 'container-test', sha256: hashKey(KEY), active: true }]);
    await podman.mustPodman(
      [
        'run',
        '--detach',
        '--pull=never',
        `--name=${name}`,
        `--cgroup-parent=${podman.cgroup.path}`,
        '--network=none',
        ...common(),
        ...machineRoot(),
        '--env=HOST=127.0.0.1',
        `--volume=${keysDir}:/etc/pagescript:ro`,
        '--env=API_KEYS_FILE=/etc/pagescript/pagescript-keys.json',
        IMAGE,
      ],
      { timeoutMs: PODMAN_TIMEOUT_MS },
    );
    let health: Record<string, unknown> = {};
    await until(
      async () => {
        const r = await podman.podman(
          [
            'exec',
            name,
            'node',
            '-e',
            "fetch('http://127.0.0.1:3000/health').then(async (r) => console.log(await r.text()))",
          ],
          { timeoutMs: PODMAN_TIMEOUT_MS },
        );
        try {
          health = JSON.parse(r.stdout) as Record<string, unknown>;
        } catch {
          return false;
        }
        return health.browser === 'ready';
      },
      'the service to be ready',
      { timeoutMs: START_TIMEOUT_MS, everyMs: 1000 },
    );
    assert.equal(health.kernelLock, 'off: not root', JSON.stringify(health));
    assert.equal(health.slotUsers, 'off: not root', JSON.stringify(health));
    assert.equal(health.slotNonDumpable, 'off: the service is not root', JSON.stringify(health));
    const top = await podman.mustPodman(['top', name, 'pid', 'user', 'huser', 'args'], {
      timeoutMs: PODMAN_TIMEOUT_MS,
    });
    const rows = top
      .trim()
      .split('\n')
      .slice(1)
      .map((row) => row.trim().split(/\s+/));
    assert.ok(
      rows.some((r) => r.slice(3).join(' ').includes('chromium')),
      top,
    );
    // tini (pid 1) stays root with SETUID and SETGID alone, and no_new_privs: it only reaps and passes signals on.
    for (const [pid, user, huser] of rows)
      if (pid !== '1')
        assert.deepEqual([user, huser], ['pagescript', String(IMAGE_UID)], `a process not of the image user:\n${top}`);
    const logs = await podman.mustPodman(['logs', name], { timeoutMs: PODMAN_TIMEOUT_MS });
    assert.match(logs, /dropped to the image's one user/, logs);
  });

  test("without SETUID and SETGID it refuses to start as the machine's root, and says what it lacks", async () => {
    const r = await podman.podman(
      [
        'run',
        '--rm',
        '--pull=never',
        `--cgroup-parent=${podman.cgroup.path}`,
        '--network=none',
        ...common(),
        '--cap-drop=ALL',
        '--security-opt=no-new-privileges',
        IMAGE,
      ],
      { timeoutMs: PODMAN_TIMEOUT_MS },
    );
    assert.equal(r.code, 77, `${r.stdout}${r.stderr}`);
    assert.match(r.stderr, /could not drop to pagescript \(uid 10001\): give the container CAP_SETUID and CAP_SETGID/);
  });
});

/** compose.yaml as a YAML parser reads it (PyYAML: anchors resolved), as JSON. */
async function composeFile(): Promise<{ services: Record<string, Record<string, unknown>> }> {
  const out = await mustRun(
    'python3',
    ['-c', 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))', join(ROOT, 'compose.yaml')],
    { timeoutMs: 30_000 },
  );
  return JSON.parse(out) as { services: Record<string, Record<string, unknown>> };
}

describe('compose.yaml', { skip }, () => {
  test("parses, and runs each instance hardened as the image test runs the machine's root", async () => {
    const { services } = await composeFile();
    const instances = Object.keys(services).filter((n) => n.startsWith('pagescript-'));
    assert.deepEqual(instances, ['pagescript-1', 'pagescript-2']);
    for (const name of instances) {
      const s = services[name] ?? {};
      assert.equal(s.build, '.');
      assert.equal(s.read_only, true);
      assert.deepEqual(s.cap_drop, ['ALL']);
      assert.deepEqual(s.cap_add, ['KILL', 'SETGID', 'SETUID']);
      assert.deepEqual(
        ['--cap-drop=ALL', `--cap-add=${(s.cap_add as string[]).join(',')}`, '--security-opt=no-new-privileges'],
        machineRoot(),
      );
      assert.deepEqual(s.security_opt, ['no-new-privileges:true', 'seccomp:./deploy/seccomp-chromium.json']);
      assert.deepEqual(s.tmpfs, ['/tmp:size=512m,mode=1777']);
      assert.equal(s.mem_limit, '2g');
      assert.equal(s.pids_limit, PIDS_LIMIT);
      assert.equal(s.network_mode, 'host');
      assert.match(JSON.stringify(s.environment), /"REDIS_URL":"redis:\/\/127\.0\.0\.1:\$\{REDIS_PORT:-6379\}"/);
    }
    assert.ok(services.redis && services.balancer);
  });

  test('podman-compose reads it as Docker Compose does: every value interpolated, each instance run hardened', async () => {
    // podman-compose 1.0.3 (Debian 12) has no `config`; --dry-run prints the podman commands it would run
    // (it still makes the project's network, removed below).
    const engine = new Podman();
    const project = `pagescript-compose-test-${process.pid}`;
    try {
      const env: NodeJS.ProcessEnv = { ...engine.env, API_KEYS: KEY };
      delete env.METRICS_TOKEN;
      const r = await run('podman-compose', ['--dry-run', '-p', project, '-f', 'compose.yaml', 'up', '-d'], {
        timeoutMs: PODMAN_TIMEOUT_MS,
        env,
        cwd: ROOT,
      });
      const runs = `${r.stdout}\n${r.stderr}`.split('\n').filter((l) => l.startsWith('podman run '));
      assert.equal(runs.length, 4, `${r.stdout}\n${r.stderr}`);
      for (const instance of ['pagescript-1', 'pagescript-2']) {
        const line = runs.find((l) => l.includes(`--name=${project}_${instance}_1 `)) ?? '';
        for (const flag of [
          '--read-only',
          '--cap-drop ALL',
          '--cap-add SETGID',
          '--cap-add SETUID',
          '--security-opt no-new-privileges:true',
          '--security-opt seccomp:./deploy/seccomp-chromium.json',
          '--tmpfs /tmp:size=512m,mode=1777',
          '-m 2g',
          `-e API_KEYS=${KEY}`,
          '-e REDIS_URL=redis://127.0.0.1:6379',
          '--network host',
          '-e TRUST_PROXY=1',
        ])
          assert.ok(line.includes(` ${flag} `), `${instance} lacks ${flag}: ${line}`);
        // SECURITY: a variable left as text (podman-compose 1.0.3 does not expand "${X:-}") would become a
        // METRICS_TOKEN anyone who reads compose.yaml knows.
        assert.doesNotMatch(line, /\$\{/, `${instance} got a variable unexpanded: ${line}`);
      }
    } finally {
      await engine.podman(['network', 'rm', '-f', `${project}_default`], { timeoutMs: PODMAN_TIMEOUT_MS });
      await engine.close();
    }
  });

  test('the seccomp profile of compose.yaml is the one the image test ran Chromium under', () => {
    const profile = JSON.parse(readFileSync(SECCOMP_PROFILE, 'utf8')) as {
      defaultAction: string;
      syscalls: Array<{ names: string[]; action: string; includes?: { caps?: string[] } }>;
    };
    assert.equal(profile.defaultAction, 'SCMP_ACT_ERRNO');
    const allowedToAll = (name: string): boolean =>
      profile.syscalls.some(
        (s) => s.names.includes(name) && s.action === 'SCMP_ACT_ALLOW' && !(s.includes?.caps?.length ?? 0),
      );
    for (const name of ['clone', 'unshare', 'chroot']) assert.ok(allowedToAll(name), name);
    // SECURITY: what a container must not get back, whatever Chromium needs.
    for (const name of ['kexec_load', 'open_by_handle_at', 'init_module', 'bpf']) assert.ok(!allowedToAll(name), name);
  });

  test("HAProxy's servers are compose's instances, and it checks their readiness", async () => {
    const { services } = await composeFile();
    const conf = readFileSync(join(ROOT, 'deploy', 'haproxy.cfg'), 'utf8');
    const servers = [...conf.matchAll(/^\s*server\s+([\w-]+)\s+"\$\{(\w+)\}"\s+check$/gm)].map((m) => [m[1], m[2]]);
    const instances = Object.keys(services).filter((n) => n.startsWith('pagescript-'));
    assert.deepEqual(
      servers.map((s) => s[0]),
      instances,
    );
    const env = services.balancer?.environment as Record<string, string>;
    for (const [server, variable] of servers) {
      const port = (services[server ?? '']?.environment as Record<string, string>).PORT;
      assert.equal(env[variable ?? ''], `127.0.0.1:${port}`, `${server}: the balancer's address is the instance's`);
    }
    assert.match(conf, /^\s*option httpchk GET \/ready$/m);
    // SECURITY: a POST that reached an instance is never sent again: only failed connections are retried.
    assert.match(conf, /^\s*retry-on conn-failure$/m);
  });
});
