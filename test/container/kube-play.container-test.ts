// The Kubernetes Deployment of deploy/kubernetes/base, played by podman
// (`npm run test:kube`; .ci/run runs it; not part of npm test): rendered with
// kubectl kustomize, its two Deployments (the service and Redis) played with
// `podman kube play`, a scrape served, then `podman kube down` leaves nothing.
// Podman 4.3 plays Pods and Deployments only, so the test changes what it must
// and says so: local image tags, one replica, the host network on 127.0.0.1
// ports, the key Secret as a hostPath, the Redis Secret as a value, and each
// pod's seccompProfile as the annotation podman reads instead (docs/scaling.md
// lists what was and was not run).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { parseAllDocuments, stringify } from 'yaml';
import type { IDeployment } from 'kubernetes-models/apps/v1';
import type { IContainer, IPodTemplateSpec } from 'kubernetes-models/v1';
import { hashKey } from '../../src/front/tenancy/keyfile.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../helpers/fixtures.js';
import { until } from '../helpers/wait.js';
import { Podman, ensureTools, freePort, keysDirectory } from './podman.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SERVICE_IMAGE = 'localhost/pagescript:container-test';
const REDIS_IMAGE = 'localhost/pagescript-redis:container-test';
const KEY = 'kube-play-test-key-0123456789';
const START_TIMEOUT_MS = 180_000;
const PODMAN_TIMEOUT_MS = 200_000;
/** Where podman 4.3 puts a played pod's cgroups with the cgroupfs manager: under the root of each hierarchy. */
const LIBPOD_PARENT = 'libpod_parent';

const tools = await ensureTools();
const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
const skip = tools ?? (kubectl.status === 0 ? undefined : 'kubectl (with kustomize 5) is not installed');
if (skip !== undefined) process.stderr.write(`[kube play test] SKIPPED: ${skip}\n`);

/** The cgroup hierarchies' mount points (v1 and v2), where libpod_parent may appear. */
function cgroupMounts(): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => / - cgroup2? /.test(l))
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m !== '');
}

/** Every directory under libpod_parent, deepest first, in every hierarchy. */
function libpodGroups(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(join(dir, e.name));
    out.push(dir);
  };
  for (const m of cgroupMounts()) walk(join(m, LIBPOD_PARENT));
  return out;
}

function env(c: IContainer, name: string, value: string): void {
  c.env = [...(c.env ?? []).filter((e) => e.name !== name), { name, value }];
}

/** The pod annotation through which podman 4.3 sets a seccomp profile (see seccompAsAnnotation). */
const SECCOMP_POD_ANNOTATION = 'seccomp.security.alpha.kubernetes.io/pod';

/**
 * Podman 4.3 ignores securityContext.seccompProfile and reads only the older annotation, whose
 * `localhost/<name>` it resolves as --seccomp-profile-root/<name>, keeping only the first segment of <name>
 * (pkg/specgen/generate/kube/seccomp.go, verifySeccompPath, at v4.3.1). So a Localhost profile in a
 * subdirectory of the node's root is named by its file, and that subdirectory is the root given to podman.
 * Returns, for a Localhost profile, where the node would hold its file.
 */
function seccompAsAnnotation(template: IPodTemplateSpec, nodeRoot: string): string | undefined {
  const profile = template.spec?.securityContext?.seccompProfile;
  if (profile === undefined) return undefined;
  const value =
    profile.type === 'Localhost'
      ? `localhost/${basename(profile.localhostProfile ?? '')}`
      : profile.type === 'RuntimeDefault'
        ? 'runtime/default'
        : 'unconfined';
  template.metadata = {
    ...template.metadata,
    annotations: { ...template.metadata?.annotations, [SECCOMP_POD_ANNOTATION]: value },
  };
  return profile.type === 'Localhost' ? join(nodeRoot, profile.localhostProfile ?? '') : undefined;
}

interface InspectedContainer {
  readonly OCIConfigPath: string;
  readonly Config: { readonly User: string };
  readonly HostConfig: { readonly ReadonlyRootfs: boolean };
}

interface OciSeccomp {
  readonly syscalls?: ReadonlyArray<{ readonly names: readonly string[]; readonly action: string }>;
}

/** Whether the seccomp filter of the runtime config a container was started with lets it chroot. */
function allowsChroot(ociConfigPath: string): boolean {
  const config = JSON.parse(readFileSync(ociConfigPath, 'utf8')) as { linux?: { seccomp?: OciSeccomp } };
  const seccomp = config.linux?.seccomp;
  assert.ok(seccomp, `${ociConfigPath}: no seccomp filter at all`);
  return (seccomp.syscalls ?? []).some((s) => s.action === 'SCMP_ACT_ALLOW' && s.names.includes('chroot'));
}

describe('podman kube play of deploy/kubernetes/base', { skip }, () => {
  let podman: Podman;
  const fixtures = new FixtureServer({ '/page': html(EXAMPLE_DOMAIN_HTML) });
  let port = 0;
  let played = false;
  let file = '';
  let groupsBefore = new Set<string>();

  before(async () => {
    podman = new Podman();
    await podman.ensureBaseImage();
    await podman.build(SERVICE_IMAGE, { context: ROOT });
    await podman.build(REDIS_IMAGE, { context: join(ROOT, 'deploy'), file: join(ROOT, 'deploy', 'redis.Dockerfile') });
    await fixtures.start();
    port = await freePort();
    const redisPort = await freePort();
    const keysDir = keysDirectory(podman.dir, [{ name: 'kube-play', sha256: hashKey(KEY), active: true }]);

    const r = spawnSync('kubectl', ['kustomize', join(ROOT, 'deploy', 'kubernetes', 'base')], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const deployments = parseAllDocuments(r.stdout)
      .map((d) => d.toJS() as IDeployment)
      .filter((o) => o.kind === 'Deployment');
    assert.deepEqual(deployments.map((d) => d.metadata?.name).sort(), ['pagescript', 'pagescript-redis']);
    // The Localhost profile the Deployment names, laid out as docs/scaling.md installs it on a node.
    const nodeSeccompRoot = join(podman.dir, 'seccomp');
    let seccompFile: string | undefined;
    for (const d of deployments) {
      const pod = d.spec?.template.spec;
      assert.ok(d.spec && pod);
      d.spec.replicas = 1;
      seccompFile = seccompAsAnnotation(d.spec.template, nodeSeccompRoot) ?? seccompFile;
      // SECURITY: the host's network so the test's traffic stays on 127.0.0.1; every listener bound to it.
      pod.hostNetwork = true;
      const c = pod.containers[0] as IContainer;
      if (d.metadata?.name === 'pagescript-redis') {
        c.image = REDIS_IMAGE;
        c.command = [
          'redis-server',
          '--bind',
          '127.0.0.1',
          '--port',
          String(redisPort),
          '--save',
          '',
          '--appendonly',
          'no',
        ];
        delete c.ports;
        if (c.livenessProbe?.tcpSocket) c.livenessProbe.tcpSocket.port = redisPort;
        continue;
      }
      c.image = SERVICE_IMAGE;
      env(c, 'HOST', '127.0.0.1');
      env(c, 'PORT', String(port));
      env(c, 'EGRESS_ALLOWLIST', fixtures.allowEntry);
      // Podman 4.3 plays no Secret: the Redis URL as a value, the key Secret as a hostPath of the same file.
      env(c, 'REDIS_URL', `redis://127.0.0.1:${redisPort}`);
      pod.volumes = (pod.volumes ?? []).map((v) =>
        v.name === 'keys' ? { name: 'keys', hostPath: { path: keysDir, type: 'Directory' } } : v,
      );
      for (const probe of [c.readinessProbe, c.livenessProbe]) if (probe?.httpGet) probe.httpGet.port = port;
      // On the host's network podman maps no ports (it refuses any): the service listens on PORT itself.
      delete c.ports;
    }
    file = join(podman.dir, 'kube.yaml');
    writeFileSync(file, deployments.map((d) => stringify(d)).join('---\n'));
    assert.ok(seccompFile, 'the service Deployment names a Localhost seccomp profile');
    const seccompRoot = dirname(seccompFile);
    mkdirSync(seccompRoot, { recursive: true });
    copyFileSync(join(ROOT, 'deploy', 'seccomp-chromium.json'), seccompFile);
    groupsBefore = new Set(libpodGroups());
    await podman.mustPodman(['kube', 'play', `--seccomp-profile-root=${seccompRoot}`, file], {
      timeoutMs: PODMAN_TIMEOUT_MS,
    });
    played = true;
  });

  after(async () => {
    try {
      // Also after a play that failed half-way: whatever of it was made goes.
      if (played || file !== '') await podman.podman(['kube', 'down', file], { timeoutMs: PODMAN_TIMEOUT_MS });
      await fixtures.close();
    } finally {
      // What podman made under libpod_parent for these pods, deepest first; libpod_parent itself if it was not there.
      for (const dir of libpodGroups()) {
        if (groupsBefore.has(dir)) continue;
        try {
          rmdirSync(dir);
        } catch {
          // busy: reported below
        }
      }
      const left = libpodGroups().filter((d) => !groupsBefore.has(d));
      const podmanLeft = await podman.close();
      assert.deepEqual([...left, ...podmanLeft], [], 'cgroups left behind');
    }
  });

  /** podman inspect of the one running container whose name matches. */
  async function inspectContainer(name: RegExp): Promise<InspectedContainer> {
    const names = await podman.mustPodman(['ps', '--format', '{{.Names}}'], { timeoutMs: PODMAN_TIMEOUT_MS });
    const found = names.split('\n').filter((n) => name.test(n));
    assert.equal(found.length, 1, `one container named ${String(name)}: ${names}`);
    const out = await podman.mustPodman(['inspect', found[0] ?? ''], { timeoutMs: PODMAN_TIMEOUT_MS });
    const [c] = JSON.parse(out) as InspectedContainer[];
    assert.ok(c, out);
    return c;
  }

  test('the played Deployment with Redis becomes ready and serves a scrape, on shared limits', async () => {
    const base = `http://127.0.0.1:${port}`;
    await until(
      async () =>
        (await request(`${base}/ready`).then(
          (r) => r.statusCode,
          () => 0,
        )) === 200,
      'the played service to be ready',
      { timeoutMs: START_TIMEOUT_MS, everyMs: 500 },
    );
    const health = (await (await request(`${base}/health`)).body.json()) as Record<string, unknown>;
    assert.equal(health.limits, 'redis', JSON.stringify(health));
    const r = await request(`${base}/api/scrape`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-key': KEY },
      body: JSON.stringify({ url: fixtures.url('/page'), script: 'return await page.title()' }),
    });
    const body = (await r.body.json()) as Record<string, unknown>;
    assert.equal(r.statusCode, 200, JSON.stringify(body));
    assert.equal(body.data, 'Example Domain');
    // The manifest's hardening as podman applied it.
    const cfg = await inspectContainer(/^pagescript-pod.*-pagescript$/);
    assert.equal(cfg.HostConfig.ReadonlyRootfs, true);
    assert.equal(cfg.Config.User, '10001:10001');
  });

  test("Chromium's own sandbox starts in the played pod, under the Deployment's Localhost profile", async () => {
    const health = (await (await request(`http://127.0.0.1:${port}/health`)).body.json()) as Record<string, unknown>;
    assert.equal(health.chromiumSandbox, true, JSON.stringify(health));
    // Podman 4.3's SecurityOpt lists a seccomp profile only when given as --security-opt on the command line
    // (libpod/container_inspect.go), so the filter is read from the runtime config the container started with.
    const service = await inspectContainer(/^pagescript-pod.*-pagescript$/);
    assert.equal(allowsChroot(service.OCIConfigPath), true, 'the service runs under deploy/seccomp-chromium.json');
    // Redis (RuntimeDefault, no capabilities) shows the same check on podman's default profile.
    const redis = await inspectContainer(/^pagescript-redis-pod.*-redis$/);
    assert.equal(allowsChroot(redis.OCIConfigPath), false, "Redis runs under podman's default profile");
  });

  test('podman kube down leaves no pod, container or cgroup of it', async () => {
    await podman.mustPodman(['kube', 'down', file], { timeoutMs: PODMAN_TIMEOUT_MS });
    played = false;
    const pods = await podman.mustPodman(['pod', 'ps', '--format', '{{.Name}}'], { timeoutMs: PODMAN_TIMEOUT_MS });
    assert.doesNotMatch(pods, /^pagescript/m);
    const ctrs = await podman.mustPodman(['ps', '-a', '--format', '{{.Names}}'], { timeoutMs: PODMAN_TIMEOUT_MS });
    assert.doesNotMatch(ctrs, /^pagescript-(redis-)?pod/m);
  });
});
