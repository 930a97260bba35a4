// The Kubernetes Deployment of deploy/kubernetes/base (and overlays/full-isolation),
// played by podman (`npm run test:kube`; .ci/run runs it; not part of npm test):
// rendered with kubectl kustomize, the service's Deployment played with
// `podman kube play` as root of the pod's own user namespace (hostUsers: false),
// a scrape served, what /health says of the slots checked, then `podman kube
// down` leaves nothing. Podman 4.3 plays Pods and Deployments only, so the test
// changes what it must and says so: local image tags, one replica, the key
// Secret as a hostPath, the Redis Secret as a value, each pod's seccompProfile
// as the annotation podman reads instead, and, so that no traffic leaves this
// machine's loopback, the pod on a network of its own with nothing but its
// loopback (--network=none): Redis runs as a second container of the service's
// pod, the page is served in the pod, and the test asks the API from inside
// (podman exec). The host's network cannot be used: a user namespace of the
// pod's own cannot mount /sys there (and Kubernetes refuses hostUsers: false
// with hostNetwork). docs/scaling.md lists what was and was not run.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import type { IDeployment } from 'kubernetes-models/apps/v1';
import type { IContainer, IPodTemplateSpec } from 'kubernetes-models/v1';
import { hashKey } from '../../src/front/tenancy/keyfile.js';
import { EXAMPLE_DOMAIN_HTML } from '../helpers/fixtures.js';
import { until } from '../helpers/wait.js';
import {
  Podman,
  USERNS_BASE,
  USERNS_SIZE,
  askInside,
  ensureTools,
  keysDirectory,
  processesOf,
  type InsideReply,
} from './podman.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SERVICE_IMAGE = 'localhost/pagescript:container-test';
const REDIS_IMAGE = 'localhost/pagescript-redis:container-test';
/** The Deployment's PORT, as shipped; the page the scrape reads and Redis listen beside it on the pod's loopback. */
const SERVICE_PORT = 3000;
const PAGE_PORT = 8081;
const REDIS_PORT = 6379;
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
  readonly Name: string;
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

/**
 * The rendered overlay's service Deployment as podman 4.3 can play it here (see the top of the file), with
 * the Redis Deployment's container as a second container of its pod. Returns the file's text and the Localhost
 * profile's path on the "node".
 */
function playable(overlay: string, keysDir: string, nodeSeccompRoot: string): { yaml: string; seccompFile: string } {
  const r = spawnSync('kubectl', ['kustomize', join(ROOT, 'deploy', 'kubernetes', overlay)], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const deployments = parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as IDeployment)
    .filter((o) => o.kind === 'Deployment');
  assert.deepEqual(deployments.map((d) => d.metadata?.name).sort(), ['pagescript', 'pagescript-redis']);
  const service = deployments.find((d) => d.metadata?.name === 'pagescript');
  const redisPod = deployments.find((d) => d.metadata?.name === 'pagescript-redis')?.spec?.template.spec;
  const pod = service?.spec?.template.spec;
  assert.ok(service?.spec && pod && redisPod);
  // SECURITY: the pod as shipped: root of a user namespace of its own, never the host's network.
  assert.equal(pod.hostUsers, false, `${overlay}: hostUsers`);
  assert.notEqual(pod.hostNetwork, true);
  service.spec.replicas = 1;
  const seccompFile = seccompAsAnnotation(service.spec.template, nodeSeccompRoot);
  assert.ok(seccompFile, 'the service Deployment names a Localhost seccomp profile');
  const c = pod.containers[0] as IContainer;
  c.image = SERVICE_IMAGE;
  env(c, 'EGRESS_ALLOWLIST', `127.0.0.1:${PAGE_PORT}`);
  // Podman 4.3 plays no Secret: the Redis URL as a value, the key Secret as a hostPath of the same file.
  env(c, 'REDIS_URL', `redis://127.0.0.1:${REDIS_PORT}`);
  pod.volumes = (pod.volumes ?? []).map((v) =>
    v.name === 'keys' ? { name: 'keys', hostPath: { path: keysDir, type: 'Directory' } } : v,
  );
  for (const probe of [c.readinessProbe, c.livenessProbe]) if (probe?.httpGet) probe.httpGet.port = SERVICE_PORT;
  // Podman 4.3 takes a containerPort for a mapping, which --network=none refuses; nothing outside needs one.
  delete c.ports;
  // Redis beside the service in its pod (pods on --network=none cannot reach each other), as its own user.
  const redis = redisPod.containers[0] as IContainer;
  redis.image = REDIS_IMAGE;
  redis.command = [
    'redis-server',
    '--bind',
    '127.0.0.1',
    '--port',
    String(REDIS_PORT),
    '--save',
    '',
    '--appendonly',
    'no',
  ];
  const rsc = redisPod.securityContext;
  redis.securityContext = {
    ...redis.securityContext,
    runAsUser: rsc?.runAsUser,
    runAsGroup: rsc?.runAsGroup,
    runAsNonRoot: rsc?.runAsNonRoot,
  };
  delete redis.ports;
  delete redis.livenessProbe;
  delete redis.readinessProbe;
  pod.containers.push(redis);
  return { yaml: stringify(service), seccompFile };
}

let built: Promise<void> | undefined;

/** The service's and Redis's images, built once for every play of the file. */
function buildImages(podman: Podman): Promise<void> {
  built ??= (async () => {
    await podman.ensureBaseImage();
    await podman.build(SERVICE_IMAGE, { context: ROOT });
    await podman.build(REDIS_IMAGE, { context: join(ROOT, 'deploy'), file: join(ROOT, 'deploy', 'redis.Dockerfile') });
  })();
  return built;
}

/** One overlay's service pod, played in a network of its own, asked from inside. */
function describePlay(
  overlay: string,
  checks: (p: { api: (path: string, body?: unknown) => Promise<InsideReply> }) => void,
): void {
  describe(`podman kube play of deploy/kubernetes/${overlay}`, { skip }, () => {
    let podman: Podman;
    let played = false;
    let file = '';
    let groupsBefore = new Set<string>();
    let serviceName = '';

    /** A request from a client on the pod's own loopback (status 0 while the service does not listen yet). */
    const api = (path: string, body?: unknown): Promise<InsideReply> =>
      askInside(podman, serviceName, { port: SERVICE_PORT, key: KEY, timeoutMs: PODMAN_TIMEOUT_MS }, path, body);

    /**
     * podman kube down, tried again (up to 3 times, a second apart) while a container's shm mount is still busy:
     * podman 4.3 may unmount it before the last of the pod's processes has let go, and then says so.
     */
    async function kubeDown(): Promise<void> {
      for (let attempt = 1; ; attempt++) {
        const r = await podman.podman(['kube', 'down', file], { timeoutMs: PODMAN_TIMEOUT_MS });
        if (r.code === 0) return;
        if (attempt >= 3 || !/device or resource busy/.test(r.stderr))
          assert.fail(`podman kube down: exit ${r.code}: ${r.stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }

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

    before(async () => {
      podman = new Podman();
      // What --userns=auto (hostUsers: false) allocates from, in a mount namespace of the test's own.
      await podman.withSubordinateIds();
      await buildImages(podman);
      // The pod's root is this machine's USERNS_BASE (the first range --userns=auto gives): it owns the key file.
      const keysDir = keysDirectory(
        podman.dir,
        [{ name: 'kube-play', sha256: hashKey(KEY), active: true }],
        USERNS_BASE,
      );
      // The Localhost profile the Deployment names, laid out as docs/scaling.md installs it on a node.
      const { yaml, seccompFile } = playable(overlay, keysDir, join(podman.dir, 'seccomp'));
      file = join(podman.dir, 'kube.yaml');
      writeFileSync(file, yaml);
      const seccompRoot = dirname(seccompFile);
      mkdirSync(seccompRoot, { recursive: true });
      copyFileSync(join(ROOT, 'deploy', 'seccomp-chromium.json'), seccompFile);
      groupsBefore = new Set(libpodGroups());
      // SECURITY: a network namespace with nothing but its own loopback: no traffic leaves it.
      await podman.mustPodman(['kube', 'play', '--network=none', `--seccomp-profile-root=${seccompRoot}`, file], {
        timeoutMs: PODMAN_TIMEOUT_MS,
      });
      played = true;
      serviceName = (await inspectContainer(/^pagescript-pod.*-pagescript$/)).Name;
      // The page, served on the pod's loopback by a process of the image's user.
      await podman.mustPodman(
        [
          'exec',
          '--detach',
          '--user=10001',
          // The page in the environment: the process's arguments stay on one line of `podman top`.
          `--env=PAGE=${EXAMPLE_DOMAIN_HTML}`,
          serviceName,
          'node',
          '-e',
          `require('node:http').createServer((q, s) => { s.writeHead(200, { 'content-type': 'text/html' }); s.end(process.env.PAGE); }).listen(${PAGE_PORT}, '127.0.0.1')`,
        ],
        { timeoutMs: PODMAN_TIMEOUT_MS },
      );
      await until(async () => (await api('/ready')).status === 200, 'the played service to be ready', {
        timeoutMs: START_TIMEOUT_MS,
        everyMs: 1000,
      });
    });

    after(async () => {
      try {
        // Also after a play that failed half-way: whatever of it was made goes.
        if (played || file !== '') await podman.podman(['kube', 'down', file], { timeoutMs: PODMAN_TIMEOUT_MS });
      } finally {
        // What podman made under libpod_parent for this pod, deepest first; libpod_parent itself if it was not there.
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

    test('the played Deployment becomes ready and serves a scrape, on limits shared in Redis', async () => {
      const health = await api('/health');
      assert.equal(health.body.limits, 'redis', health.text);
      const r = await api('/api/scrape', {
        url: `http://127.0.0.1:${PAGE_PORT}/`,
        script: 'return await page.title()',
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data, 'Example Domain');
      const cfg = await inspectContainer(/^pagescript-pod.*-pagescript$/);
      assert.equal(cfg.HostConfig.ReadonlyRootfs, true);
    });

    test("the service is root of the pod's user namespace, each child its own user, none this machine's root", async () => {
      const { text: top, rows, usersOf: of } = await processesOf(podman, serviceName, PODMAN_TIMEOUT_MS);
      assert.deepEqual(of(/dist\/server\.js/), ['root'], top);
      assert.deepEqual(of(/egress-process\.js/), ['pagescript-egress'], top);
      const slotUsers = of(/slot\.js|chromium-headless-shell|chrome-sandbox/);
      assert.ok(slotUsers.length > 0 && slotUsers.every((u) => /^pagescript-slot-\d+$/.test(u)), top);
      // SECURITY: every process is a uid of the pod's namespace on this machine, its root included.
      for (const r of rows) {
        const uid = Number(r.huser);
        assert.ok(uid >= USERNS_BASE && uid < USERNS_BASE + USERNS_SIZE, `${r.args}: host uid ${r.huser}\n${top}`);
      }
      const health = await api('/health');
      // Each slot its own user (two slots: MAX_CONCURRENCY 2 as shipped).
      assert.deepEqual(health.body.slotUsers, ['pagescript-slot-0', 'pagescript-slot-1'], health.text);
    });

    test("Chromium's own sandbox starts in the played pod, under the Deployment's Localhost profile", async () => {
      const health = await api('/health');
      assert.equal(health.body.chromiumSandbox, true, health.text);
      // Podman 4.3's SecurityOpt lists a seccomp profile only when given as --security-opt on the command line
      // (libpod/container_inspect.go), so the filter is read from the runtime config the container started with.
      const service = await inspectContainer(/^pagescript-pod.*-pagescript$/);
      assert.equal(allowsChroot(service.OCIConfigPath), true, 'the service runs under deploy/seccomp-chromium.json');
    });

    checks({ api });

    test('podman kube down leaves no pod, container or cgroup of it', async () => {
      await kubeDown();
      played = false;
      const pods = await podman.mustPodman(['pod', 'ps', '--format', '{{.Name}}'], { timeoutMs: PODMAN_TIMEOUT_MS });
      assert.doesNotMatch(pods, /^pagescript/m);
      const ctrs = await podman.mustPodman(['ps', '-a', '--format', '{{.Names}}'], { timeoutMs: PODMAN_TIMEOUT_MS });
      assert.doesNotMatch(ctrs, /^pagescript-pod/m);
    });
  });
}

describePlay('base', ({ api }) => {
  test('at Baseline: no kernel lock (no NET_ADMIN), no private /tmp nor non-dumpable Chromium (no SYS_ADMIN)', async () => {
    const h = await api('/health');
    assert.equal(h.body.kernelLock, 'off: no NET_ADMIN', h.text);
    assert.match(String(h.body.slotPrivateTmp), /^off: no SYS_ADMIN/, h.text);
    // allowPrivilegeEscalation: false sets no_new_privs, which Chromium's SUID helper could not run under anyway.
    assert.match(String(h.body.slotNonDumpable), /^off: Chromium stays readable/, h.text);
  });
});

describePlay('overlays/full-isolation', ({ api }) => {
  test("with NET_ADMIN, SYS_ADMIN and SYS_CHROOT: the kernel lock in the pod's network, private /tmp, non-dumpable", async () => {
    const h = await api('/health');
    assert.equal(h.body.kernelLock, 'on', h.text);
    assert.equal(h.body.slotPrivateTmp, 'on', h.text);
    assert.equal(h.body.slotNonDumpable, 'on', h.text);
  });
});
