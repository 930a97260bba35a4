// The container image, built from the repo's Dockerfile and run for real with
// podman: `npm run test:container` (CI runs it after `npm test`; it is not part
// of `npm test`, whose runner picks up *.test.ts only).
//
// It prepares what it needs (podman, runc, debootstrap, podman-compose from
// Debian; a debian:bookworm-slim stand-in made with debootstrap, cached as
// BASE_IMAGE), builds the image (podman's layer cache keeps a rebuild with
// unchanged dependencies short), and runs one container as a self-hoster would:
// read-only root file system with a small tmpfs, no capabilities, the seccomp
// profile of deploy/, a 1 GiB memory limit, the image's own non-root user. The
// container shares the host's network so that every byte stays on 127.0.0.1.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { CHROMIUM_PATHS } from '../../src/common/config.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../helpers/fixtures.js';
import { until } from '../helpers/wait.js';
import { hashKey } from '../../src/front/tenancy/keyfile.js';
import { IMAGE_UID, Podman, ensureTools, freePort, keysDirectory, mustRun, run } from './podman.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const IMAGE = 'localhost/pagescript:container-test';
const NAME = `pagescript-container-test-${process.pid}`;
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
 * How the container runs, as docs/container.md tells a self-hoster to run it.
 * SECURITY: no capabilities, no privilege gain, a read-only root; the seccomp
 * profile differs from podman's default only in letting Chromium's sandbox chroot.
 */
function hardening(): string[] {
  return [
    '--read-only',
    '--tmpfs=/tmp:rw,nosuid,nodev,size=512m,mode=1777',
    '--cap-drop=ALL',
    '--security-opt=no-new-privileges',
    `--security-opt=seccomp=${SECCOMP_PROFILE}`,
    `--memory=${MEMORY_LIMIT}`,
    `--memory-swap=${MEMORY_LIMIT}`,
    // SECURITY: a fork bomb from escaped code stops here (every slot is one user in the container).
    `--pids-limit=${PIDS_LIMIT}`,
  ];
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
    const keysDir = keysDirectory(podman.dir, [{ name: 'container-test', sha256: hashKey(KEY), active: true }]);
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
        ...hardening(),
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
    // Not root in the image: the kernel lock is the orchestrator's (docs/container.md), and /health says so.
    assert.equal(r.body.kernelLock, 'off: not root', r.text);
  });

  test('the service and Chromium run as the image user, not root', async () => {
    assert.equal(await inspect('{{.Config.User}}'), `${IMAGE_UID}:${IMAGE_UID}`);
    const top = await podman.mustPodman(['top', NAME, 'user', 'comm'], { timeoutMs: PODMAN_TIMEOUT_MS });
    const rows = top.trim().split('\n').slice(1);
    assert.ok(
      rows.some((row) => /chromium/.test(row)),
      top,
    );
    for (const row of rows) assert.match(row, /^(10001|pagescript)\s/, `a process not of the image user:\n${top}`);
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

  test('in the container every slot runs as the one uid: its slot processes and renderers are in reach of each other (as docs/security.md states)', async () => {
    // A request first, so that a slot process and its renderers are up.
    await assertStillServing();
    // A process of the image user with no capabilities: what code that escaped into one slot process would be.
    // For each kind, whether /proc/<pid>/environ (ptrace-read access, as /proc/<pid>/mem) can be read.
    const probe = [
      'for d in /proc/[0-9]*; do',
      '  c=$(tr "\\0" " " < $d/cmdline 2>/dev/null) || continue',
      '  case "$c" in',
      '    *--type=renderer*) k=renderer ;;',
      '    *executor.js*) k=slot ;;',
      '    *) continue ;;',
      '  esac',
      '  if cat $d/environ > /dev/null 2>&1; then echo "$k readable"; else echo "$k refused"; fi',
      'done',
    ].join('\n');
    const out = await podman.mustPodman(['exec', NAME, 'sh', '-c', probe], { timeoutMs: PODMAN_TIMEOUT_MS });
    const lines = new Set(out.trim().split('\n'));
    // What docs/security.md states of the container: one uid, so a process of it reads another slot's Node
    // process and its Chromium renderers (their user namespaces are children of the uid's own, so the
    // renderers' not being dumpable does not stop it). As root each slot has its own uid
    // (test/e2e/least-privilege.test.ts). When this changes (a namespace per slot), this test says so.
    assert.deepEqual([...lines].sort(), ['renderer readable', 'slot readable'], out);
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
    const options = hardening().filter((o) => !o.startsWith('--security-opt=seccomp='));
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
  test('parses, and runs each instance hardened as the image test runs it', async () => {
    const { services } = await composeFile();
    const instances = Object.keys(services).filter((n) => n.startsWith('pagescript-'));
    assert.deepEqual(instances, ['pagescript-1', 'pagescript-2']);
    for (const name of instances) {
      const s = services[name] ?? {};
      assert.equal(s.build, '.');
      assert.equal(s.read_only, true);
      assert.deepEqual(s.cap_drop, ['ALL']);
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
