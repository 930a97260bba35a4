// deploy/kubernetes/ rendered by kustomize (kubectl kustomize) and every object
// validated against the Kubernetes and KEDA schemas (kubernetes-models), then
// held to what the service needs: hardening, probes that exist, a termination
// grace longer than the drain, resources from the memory plan, a fence to
// private ranges. No cluster: what a cluster would add is in docs/scaling.md.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Namespace, Secret, Service } from 'kubernetes-models/v1';
import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import type { IDeployment } from 'kubernetes-models/apps/v1';
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { loadConfig } from '../../../src/common/config.js';
import { openApiDocument } from '../../../src/front/info/openapi.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const KUSTOMIZE = join(ROOT, 'deploy', 'kubernetes');
/** server.ts's SHUTDOWN_KILL_MARGIN_MS: how long past SHUTDOWN_GRACE_MS the process waits before it exits anyway. */
const KILL_MARGIN_MS = 15_000;

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [k: string]: unknown;
}

/** The schema of each kind the manifests may hold: anything else fails the test. */
const MODELS: Record<string, new (o: never) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
};

const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
const skip =
  kubectl.status === 0
    ? undefined
    : 'kubectl (with kustomize 5) is not installed: install it to render deploy/kubernetes/';
if (skip !== undefined) process.stderr.write(`[kubernetes test] SKIPPED: ${skip}\n`);

function render(dir: string): K8sObject[] {
  const r = spawnSync('kubectl', ['kustomize', join(KUSTOMIZE, dir)], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `kubectl kustomize ${dir}: ${r.stderr}`);
  return parseAllDocuments(r.stdout).map((d) => {
    assert.deepEqual(d.errors, [], dir);
    const o = d.toJS() as K8sObject;
    // kustomize wraps a Secret's base64 at 70 columns; the API server's decoder skips the newlines, the schema's does not.
    if (o.kind === 'Secret' && o.data !== undefined)
      o.data = Object.fromEntries(
        Object.entries(o.data as Record<string, string>).map(([k, v]) => [k, v.replace(/\s/g, '')]),
      );
    return o;
  });
}

function one<T>(objects: K8sObject[], kind: string, name: string): T {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name === name);
  assert.equal(found.length, 1, `${kind} ${name}`);
  return found[0] as T;
}

/** The capabilities Kubernetes' Baseline Pod Security Standard lets a container add. */
const BASELINE_CAPABILITIES = new Set([
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
]);

/**
 * What of a pod breaks the Baseline Pod Security Standard (kubernetes.io/docs/concepts/security/pod-security-standards),
 * for the fields these manifests can hold: host namespaces, privileged containers, added capabilities, hostPath
 * volumes, host ports, an unconfined seccomp profile.
 */
function baselineViolations(pod: IPodSpec): string[] {
  const out: string[] = [];
  for (const field of ['hostNetwork', 'hostPID', 'hostIPC'] as const) if (pod[field] === true) out.push(field);
  const containers = [...pod.containers, ...(pod.initContainers ?? [])];
  for (const c of containers) {
    if (c.securityContext?.privileged === true) out.push(`privileged container ${c.name}`);
    for (const cap of c.securityContext?.capabilities?.add ?? [])
      if (!BASELINE_CAPABILITIES.has(cap)) out.push(`capability ${cap}`);
    for (const p of c.ports ?? []) if (p.hostPort !== undefined && p.hostPort !== 0) out.push(`hostPort ${p.hostPort}`);
  }
  for (const v of pod.volumes ?? []) if (v.hostPath !== undefined) out.push(`hostPath volume ${v.name}`);
  const profiles = [pod.securityContext?.seccompProfile, ...containers.map((c) => c.securityContext?.seccompProfile)];
  if (profiles.some((p) => p?.type === 'Unconfined')) out.push('seccomp Unconfined');
  return out;
}

function envOf(c: IContainer): Record<string, string> {
  return Object.fromEntries((c.env ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value ?? '']));
}

/** Kubernetes quantities of memory in MiB (Mi and Gi are what the manifests use). */
function mib(q: unknown): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(String(q));
  assert.ok(m, `a memory quantity in Mi or Gi: ${String(q)}`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
}

describe('deploy/kubernetes', { skip }, () => {
  const rendered =
    skip === undefined
      ? ['base', 'overlays/example', 'overlays/keda', 'overlays/full-isolation'].map((d) => [d, render(d)])
      : [];
  const byDir = Object.fromEntries(rendered) as Record<string, K8sObject[]>;

  test('kustomize renders the base and each overlay, and every object is valid against its Kubernetes or KEDA schema', () => {
    for (const [dir, objects] of rendered as Array<[string, K8sObject[]]>) {
      assert.ok(objects.length >= 8, dir);
      for (const o of objects) {
        const Model = MODELS[`${o.apiVersion}/${o.kind}`];
        assert.ok(Model, `${dir}: no schema for ${o.apiVersion} ${o.kind}`);
        assert.doesNotThrow(() => new Model(o as never).validate(), `${dir}: ${o.kind} ${o.metadata.name}`);
      }
    }
  });

  test('a manifest that breaks the schema fails validation (the check can fail)', () => {
    const d = structuredClone(one<IDeployment>(byDir.base ?? [], 'Deployment', 'pagescript'));
    const c = d.spec?.template.spec?.containers[0] as unknown as Record<string, unknown>;
    c.ports = [{ containerPort: 'http' }];
    assert.throws(() => new Deployment(d).validate(), /containerPort must be integer/);
  });

  test('the base needs nothing but Kubernetes; KEDA replaces the HPA in an overlay of its own', () => {
    assert.ok((byDir.base ?? []).every((o) => !o.apiVersion.startsWith('keda.sh/')));
    const keda = byDir['overlays/keda'] ?? [];
    assert.equal(keda.filter((o) => o.kind === 'HorizontalPodAutoscaler').length, 0);
    assert.equal(keda.filter((o) => o.kind === 'ScaledObject').length, 1);
  });

  const deployment = (): IDeployment => one<IDeployment>(byDir['overlays/example'] ?? [], 'Deployment', 'pagescript');
  const container = (): IContainer => deployment().spec?.template.spec?.containers[0] as IContainer;

  test('the pod is root of its own user namespace, read-only, with the Chromium seccomp profile, within Baseline', () => {
    const pod = deployment().spec?.template.spec;
    assert.ok(pod);
    // SECURITY: root in the pod is an unprivileged uid range on the node; each slot runs as a user of its own.
    assert.equal(pod.hostUsers, false);
    assert.equal(pod.securityContext?.runAsUser, 0);
    assert.notEqual(pod.securityContext?.runAsNonRoot, true, 'runAsNonRoot would refuse to start the pod');
    assert.deepEqual(pod.securityContext?.seccompProfile, {
      type: 'Localhost',
      localhostProfile: 'pagescript/seccomp-chromium.json',
    });
    assert.equal(pod.automountServiceAccountToken, false);
    const sc = container().securityContext;
    assert.equal(sc?.readOnlyRootFilesystem, true);
    assert.equal(sc?.allowPrivilegeEscalation, false);
    assert.deepEqual(sc?.capabilities?.drop, ['ALL']);
    assert.deepEqual(sc?.capabilities?.add, ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETUID']);
    assert.deepEqual(baselineViolations(pod), []);
    const ns = one<{ metadata: { labels?: Record<string, string> } }>(
      byDir['overlays/example'] ?? [],
      'Namespace',
      'pagescript',
    );
    assert.equal(ns.metadata.labels?.['pod-security.kubernetes.io/enforce'], 'baseline');
  });

  test('overlays/full-isolation adds the kernel lock and the private /tmp, outside Baseline, in a privileged namespace', () => {
    const objects = byDir['overlays/full-isolation'] ?? [];
    const pod = one<IDeployment>(objects, 'Deployment', 'pagescript').spec?.template.spec;
    assert.ok(pod);
    assert.equal(pod.hostUsers, false);
    const sc = pod.containers[0]?.securityContext;
    assert.deepEqual(sc?.capabilities?.drop, ['ALL']);
    for (const cap of ['NET_ADMIN', 'SYS_ADMIN', 'SYS_CHROOT']) assert.ok(sc?.capabilities?.add?.includes(cap), cap);
    // Chromium's SUID sandbox helper runs only without no_new_privs.
    assert.equal(sc?.allowPrivilegeEscalation, true);
    assert.deepEqual(baselineViolations(pod), ['capability NET_ADMIN', 'capability SYS_ADMIN']);
    const ns = one<{ metadata: { labels?: Record<string, string> } }>(objects, 'Namespace', 'pagescript');
    assert.equal(ns.metadata.labels?.['pod-security.kubernetes.io/enforce'], 'privileged');
  });

  test('the Baseline check can fail: host namespaces, privileged, hostPath and an unconfined profile', () => {
    const pod = structuredClone(deployment().spec?.template.spec);
    assert.ok(pod);
    pod.hostNetwork = true;
    pod.securityContext = { ...pod.securityContext, seccompProfile: { type: 'Unconfined' } };
    pod.volumes = [...(pod.volumes ?? []), { name: 'host', hostPath: { path: '/' } }];
    const c = pod.containers[0];
    assert.ok(c);
    c.securityContext = { ...c.securityContext, privileged: true };
    assert.deepEqual(baselineViolations(pod), [
      'hostNetwork',
      'privileged container pagescript',
      'hostPath volume host',
      'seccomp Unconfined',
    ]);
  });

  test("the probes are the service's own readiness and liveness paths, and no probe needs a key", () => {
    const paths = Object.keys((openApiDocument(loadConfig({})) as { paths: Record<string, unknown> }).paths);
    assert.equal(container().readinessProbe?.httpGet?.path, '/ready');
    assert.equal(container().livenessProbe?.httpGet?.path, '/live');
    for (const p of ['/ready', '/live']) assert.ok(paths.includes(p), p);
  });

  test('the termination grace outlasts the preStop sleep, SHUTDOWN_GRACE_MS and the exit margin', () => {
    const env = envOf(container());
    const grace = loadConfig(env).shutdownGraceMs;
    assert.equal(grace, loadConfig({}).shutdownGraceMs, 'the default grace: every admitted request finishes');
    const preStop = container().lifecycle?.preStop?.exec?.command ?? [];
    assert.equal(preStop[0], 'sleep');
    const preStopMs = Number(preStop[1]) * 1000;
    const podGraceMs = (deployment().spec?.template.spec?.terminationGracePeriodSeconds ?? 30) * 1000;
    assert.ok(podGraceMs > preStopMs + grace + KILL_MARGIN_MS, `${podGraceMs} ms`);
    // A rolling update never takes a ready pod away before its replacement is ready.
    assert.equal(deployment().spec?.strategy?.rollingUpdate?.maxUnavailable, 0);
  });

  test('resources follow the memory plan: MAX_CONCURRENCY fits SERVICE_MEMORY_MB, the request holds the plan, the limit is SERVICE_MEMORY_MB', () => {
    const env = envOf(container());
    const config = loadConfig(env);
    assert.equal(config.maxConcurrency, Number(env.MAX_CONCURRENCY), 'no slot is dropped for want of memory');
    assert.equal(config.maxConcurrencyAsked, undefined);
    const { requests, limits } = container().resources ?? {};
    assert.equal(mib(limits?.memory), Number(env.SERVICE_MEMORY_MB));
    assert.ok(
      mib(requests?.memory) >= config.memory.plannedMb,
      `${String(requests?.memory)} < the plan's ${config.memory.plannedMb} MiB`,
    );
    assert.ok(mib(requests?.memory) <= mib(limits?.memory));
  });

  test('keys come from a Secret mounted as a directory (updated in place on change), never through subPath', () => {
    const env = envOf(container());
    const mount = container().volumeMounts?.find((m) => m.name === 'keys');
    assert.ok(mount && mount.subPath === undefined && mount.readOnly === true);
    assert.ok(env.API_KEYS_FILE?.startsWith(`${mount.mountPath}/`));
    const volume = deployment().spec?.template.spec?.volumes?.find((v) => v.name === 'keys');
    assert.equal(volume?.secret?.secretName, 'pagescript-keys');
    const secret = one<{ metadata: { name: string } }>(byDir['overlays/example'] ?? [], 'Secret', 'pagescript-keys');
    assert.equal(
      secret.metadata.name,
      'pagescript-keys',
      'no hash suffix: updating the Secret updates the mounted file',
    );
    const redis = container().env?.find((e) => e.name === 'REDIS_URL');
    assert.equal(redis?.valueFrom?.secretKeyRef?.name, 'pagescript-redis');
  });

  test('the NetworkPolicy lets the pods reach Redis, DNS and the public internet, not private ranges or the metadata address', () => {
    const np = one<INetworkPolicy>(byDir.base ?? [], 'NetworkPolicy', 'pagescript');
    assert.deepEqual(np.spec?.policyTypes, ['Ingress', 'Egress']);
    const egress = np.spec?.egress ?? [];
    const toLabels = egress.flatMap((r) => r.to ?? []).map((p) => p.podSelector?.matchLabels ?? {});
    assert.ok(toLabels.some((l) => l['app.kubernetes.io/name'] === 'pagescript-redis'));
    assert.ok(toLabels.some((l) => l['k8s-app'] === 'kube-dns'));
    const v4 = egress.flatMap((r) => r.to ?? []).find((p) => p.ipBlock?.cidr === '0.0.0.0/0')?.ipBlock;
    for (const range of [
      '10.0.0.0/8',
      '172.16.0.0/12',
      '192.168.0.0/16',
      '127.0.0.0/8',
      '169.254.0.0/16',
      '100.64.0.0/10',
    ])
      assert.ok(v4?.except?.includes(range), range);
    const v6 = egress.flatMap((r) => r.to ?? []).find((p) => p.ipBlock?.cidr === '::/0')?.ipBlock;
    for (const range of ['::1/128', 'fc00::/7', 'fe80::/10']) assert.ok(v6?.except?.includes(range), range);
    // Every other rule names its peers: nothing else opens the fence.
    for (const r of egress) assert.ok((r.to ?? []).length > 0);
  });

  test("KEDA scales on the service's own running and queued gauges, one replica per MAX_CONCURRENCY", () => {
    const so = one<{
      spec: { triggers: Array<{ type: string; metricType: string; metadata: Record<string, string> }> };
    }>(byDir['overlays/keda'] ?? [], 'ScaledObject', 'pagescript');
    const [trigger] = so.spec.triggers;
    assert.equal(trigger?.type, 'prometheus');
    assert.equal(trigger?.metricType, 'AverageValue');
    assert.match(trigger?.metadata.query ?? '', /pagescript_jobs_running/);
    assert.match(trigger?.metadata.query ?? '', /pagescript_jobs_queued/);
    assert.equal(trigger?.metadata.threshold, envOf(container()).MAX_CONCURRENCY);
  });
});
