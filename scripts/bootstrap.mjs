#!/usr/bin/env node
// Prepares a machine for pagescript and then runs one of its commands on Node 24.
//
//   node scripts/bootstrap.mjs start   -> build if stale, then run the service
//   node scripts/bootstrap.mjs test    -> build, type-check, lint, unit and e2e tests (not conformance), coverage
//   node scripts/bootstrap.mjs test:unit -> build if stale, unit tests only (no Chromium; seconds)
//   node scripts/bootstrap.mjs test:e2e  -> build if stale, e2e tests (real Chromium)
//   node scripts/bootstrap.mjs test:conformance -> build if stale, the conformance suite
//   node scripts/bootstrap.mjs lint    -> eslint and prettier --check
//   node scripts/bootstrap.mjs run F…  -> run a script file (bench, key tools) on Node 24
//
// This file runs on whatever Node the machine has (18 or later) and uses nothing
// but Node's standard library, because it is what installs everything else:
//   1. a Node 24 runtime from the npm registry (node-<platform>-<arch>) when the
//      system Node is older, kept in .runtime/ and never installed system-wide;
//   2. Chromium: PUPPETEER_EXECUTABLE_PATH, or Debian's chromium-headless-shell
//      (CHROMIUM=shell, the default) or chromium (CHROMIUM=full), installed with
//      apt-get when we are root on Debian and it is missing;
//   3. node_modules, installed from the lock file (npm ci, devDependencies
//      included) by npm running on the Node 24 runtime so that native addons
//      (isolated-vm) match it;
//   4. as root on Linux: the unprivileged system users the request slots run as
//      (a user per slot: SLOT_USER_PREFIX + i, default pagescript-slot-0…63 with
//      uids 59000…59063; SLOT_USERS=N for N of them) and the egress process runs
//      as (EGRESS_USER, default pagescript-egress), without a home or a login shell;
//   5. as root on Debian: nftables (nft), with which the service sets its kernel
//      lock (src/front/host/kernel-lock.ts) unless EGRESS_KERNEL_LOCK=off;
//      and Chromium's SUID sandbox helper (chromium-sandbox), with which its
//      processes run non-dumpable (src/front/host/slot-privacy.ts).
// Each step leaves a stamp and is skipped on the next run when nothing changed.
import { Buffer } from 'node:buffer';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const RUNTIME_VERSION = pkg.pagescript.nodeRuntime; // exact version, e.g. "24.21.0"
const REQUIRED_MAJOR = Number(RUNTIME_VERSION.split('.')[0]);
/** Debian's two builds of Chromium, by the CHROMIUM setting (package.json's pagescript.chromiumShellPath and chromiumPath; src/common/config.ts reads them too). */
const DEBIAN_CHROMIUM = {
  shell: { path: pkg.pagescript.chromiumShellPath, pkg: 'chromium-headless-shell' },
  full: { path: pkg.pagescript.chromiumPath, pkg: 'chromium' },
};
/** apt-get is retried this often, this far apart, when another apt holds its lock. */
const APT_ATTEMPTS = 6;
const APT_RETRY_MS = 10_000;

function say(msg) {
  process.stderr.write(`[pagescript setup] ${msg}\n`);
}

function fail(msg) {
  say(`error: ${msg}`);
  process.exit(1);
}

function run(cmd, args, opts = {}) {
  // Set-up output goes to stderr: stdout belongs to the command run (e.g. the key `npm run key` prints).
  const r = spawnSync(cmd, args, { stdio: ['inherit', 2, 2], cwd: ROOT, ...opts });
  if (r.error) fail(`could not run ${cmd}: ${r.error.message}`);
  return r.status ?? 1;
}

function mustRun(cmd, args, opts = {}) {
  const status = run(cmd, args, opts);
  if (status !== 0) fail(`${cmd} ${args.join(' ')} exited with ${status}`);
}

/** Returns the path of a Node binary of the required major version. */
function ensureNode() {
  const major = Number(process.versions.node.split('.')[0]);
  if (major === REQUIRED_MAJOR) return process.execPath;
  const pkgName = `node-${process.platform}-${process.arch}`;
  const prefix = join(ROOT, '.runtime');
  const bin = join(prefix, 'node_modules', pkgName, 'bin', 'node');
  const stamp = join(prefix, 'version');
  if (existsSync(bin) && existsSync(stamp) && readFileSync(stamp, 'utf8') === RUNTIME_VERSION) return bin;
  say(`system Node is ${process.versions.node}; installing Node ${RUNTIME_VERSION} (${pkgName}) into .runtime/`);
  mkdirSync(prefix, { recursive: true });
  writeFileSync(join(prefix, 'package.json'), '{"private":true}\n');
  mustRun('npm', [
    'install',
    '--prefix',
    prefix,
    '--no-save',
    '--no-package-lock',
    '--ignore-scripts',
    `${pkgName}@${RUNTIME_VERSION}`,
  ]);
  if (!existsSync(bin)) fail(`${pkgName}@${RUNTIME_VERSION} did not provide ${bin}`);
  writeFileSync(stamp, RUNTIME_VERSION);
  return bin;
}

let aptUpdated = false;
/** apt-get update, once per run. */
function aptUpdate(env) {
  if (aptUpdated) return;
  aptGet(['update'], env);
  aptUpdated = true;
}

/**
 * Runs apt-get, waiting out another apt or dpkg that holds the lock (apt waits
 * up to 60 s for dpkg's lock itself; `update` and other failures are retried).
 */
function aptGet(args, env) {
  for (let attempt = 1; ; attempt++) {
    const status = run('apt-get', ['-o', 'DPkg::Lock::Timeout=60', ...args], { env });
    if (status === 0) return;
    if (attempt >= APT_ATTEMPTS) fail(`apt-get ${args.join(' ')} exited with ${status}`);
    say(`apt-get ${args[0]} exited with ${status} (apt busy?); trying again in ${APT_RETRY_MS / 1000} s`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, APT_RETRY_MS);
  }
}

/**
 * Returns the Chromium to run, { path, mode }, installing Debian's package when
 * we may. CHROMIUM=shell (the default) is chromium-headless-shell, CHROMIUM=full
 * the whole browser; PUPPETEER_EXECUTABLE_PATH wins over both (its mode is then
 * CHROMIUM, or read from its file name by src/common/config.ts).
 */
function ensureChromium() {
  const fromEnv = process.env.PUPPETEER_EXECUTABLE_PATH;
  if (fromEnv) {
    if (!existsSync(fromEnv)) fail(`PUPPETEER_EXECUTABLE_PATH=${fromEnv} does not exist`);
    return { path: fromEnv, mode: process.env.CHROMIUM };
  }
  const asked = process.env.CHROMIUM?.trim().toLowerCase();
  if (asked !== undefined && asked !== '' && !(asked in DEBIAN_CHROMIUM))
    fail(`CHROMIUM="${process.env.CHROMIUM}" must be shell or full`);
  const mode = asked || 'shell';
  const want = DEBIAN_CHROMIUM[mode];
  if (existsSync(want.path)) return { path: want.path, mode };
  if (installDebianChromium(want)) return { path: want.path, mode };
  // Not allowed to install: the default falls back to the full browser when that is what is here.
  if (!asked && existsSync(DEBIAN_CHROMIUM.full.path)) {
    say(`${want.path} is missing and we may not install it; using ${DEBIAN_CHROMIUM.full.path} (CHROMIUM=full)`);
    return { path: DEBIAN_CHROMIUM.full.path, mode: 'full' };
  }
  fail(
    `no Chromium found at ${want.path}. Install Debian's ${want.pkg} (or Chrome) or set PUPPETEER_EXECUTABLE_PATH ` +
      `to its executable, e.g. PUPPETEER_EXECUTABLE_PATH=/usr/lib/chromium/chromium CHROMIUM=full npm start`,
  );
}

/**
 * Installs one of Debian's Chromium packages when we may (root on Debian);
 * false when we may not. Fails when the install leaves no executable.
 */
function installDebianChromium(want) {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (process.platform !== 'linux' || !isRoot || !existsSync('/etc/debian_version') || !existsSync('/usr/bin/apt-get'))
    return false;
  say(`Chromium is missing; installing Debian's ${want.pkg} package (apt-get)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  aptUpdate(env);
  aptGet(['install', '-y', '--no-install-recommends', want.pkg, 'fonts-liberation'], env);
  if (existsSync(want.path)) return true;
  fail(`apt-get installed ${want.pkg} but ${want.path} is missing; set PUPPETEER_EXECUTABLE_PATH`);
}

function withNodeOnPath(nodeBin, extra = {}) {
  return { ...process.env, PATH: `${dirname(nodeBin)}:${process.env.PATH ?? ''}`, ...extra };
}

/** How node_modules is installed; part of the install stamp, so that changing it installs again. */
const NPM_INSTALL = ['ci', '--include=dev', '--no-audit', '--no-fund'];

/**
 * Installs node_modules from the committed lock file with npm running on the
 * Node 24 runtime. `npm ci` never writes package-lock.json, so a fresh clone
 * stays clean. --include=dev: the build (tsup) and the tests need the
 * devDependencies whatever NODE_ENV says (npm leaves them out under
 * NODE_ENV=production); the service still runs with the NODE_ENV it was given.
 */
function ensureDependencies(nodeBin) {
  const lock = join(ROOT, 'package-lock.json');
  const hash = createHash('sha256')
    .update(readFileSync(join(ROOT, 'package.json')))
    .update(existsSync(lock) ? readFileSync(lock) : '')
    .update(RUNTIME_VERSION)
    .update(NPM_INSTALL.join(' '))
    .digest('hex');
  const stamp = join(ROOT, 'node_modules', '.pagescript-install');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === hash) return;
  say(`installing dependencies (npm ${NPM_INSTALL.join(' ')})`);
  // Native addons are built against the runtime we run on, never the system headers.
  const env = withNodeOnPath(nodeBin, { PUPPETEER_SKIP_DOWNLOAD: '1', npm_config_nodedir: '' });
  const status = run('npm', NPM_INSTALL, { env });
  // npm ci refuses a lock that is out of step with package.json, including one
  // that leaves out another platform's optional packages (rollup's).
  if (status !== 0)
    fail(
      `npm ci exited with ${status}; if package-lock.json is out of step with package.json, ` +
        'run `npm install` and commit the package-lock.json it writes',
    );
  writeFileSync(stamp, hash);
}

function newestMtime(path) {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)));
  return newest;
}

/** Builds dist/ with tsup when any source is newer than the last build. */
function ensureBuild(nodeBin, force) {
  const stamp = join(ROOT, 'dist', '.built');
  const sources = Math.max(
    ...['src', 'sandbox', 'playground', 'package.json', 'tsup.config.ts', 'package-lock.json'].map((p) =>
      newestMtime(join(ROOT, p)),
    ),
  );
  if (!force && existsSync(stamp) && statSync(stamp).mtimeMs >= sources) return;
  mustRun(nodeBin, [join(ROOT, 'node_modules', 'tsup', 'dist', 'cli-default.js')], { env: withNodeOnPath(nodeBin) });
  writeFileSync(stamp, new Date().toISOString());
}

/**
 * As root, the service runs each request slot's process and Chromium as an
 * unprivileged user of the slot's own, and its egress process as another (src/front/slots/supervisor.ts,
 * src/front/egress-process/egress-supervisor.ts); this creates them. They need to read dist/ and
 * node_modules (world-readable as npm and tsup leave them) and must not read the
 * key file (written 0600 by npm run key).
 */
/** The slot users' first uid and how many are made unless SLOT_USERS says (src/front/host/users.ts). */
const SLOT_UID_BASE = 59000;
const SLOT_USERS = 64;

function ensureServiceUsers() {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || process.platform !== 'linux') return;
  const passwd = () => (existsSync('/etc/passwd') ? readFileSync('/etc/passwd', 'utf8') : '').split('\n');
  const addUser = (user, extra = []) =>
    mustRun('useradd', [
      '--system',
      '--no-create-home',
      '--home-dir',
      '/nonexistent',
      '--shell',
      '/usr/sbin/nologin',
      ...extra,
      user,
    ]);
  const egress = process.env.EGRESS_USER || 'pagescript-egress';
  if (!passwd().some((l) => l.startsWith(`${egress}:`))) {
    say(`creating the system user ${egress} that the egress process runs as`);
    addUser(egress);
  }
  // A user per request slot, with consecutive uids from pagescript.slotUidBase (src/front/host/users.ts):
  // slot i's process and Chromium run as SLOT_USER_PREFIX + i, so that no slot can ptrace or signal another's.
  const prefix = process.env.SLOT_USER_PREFIX || 'pagescript-slot-';
  const count = Number(process.env.SLOT_USERS || SLOT_USERS);
  if (!Number.isInteger(count) || count < 1 || count > 256)
    throw new Error(`SLOT_USERS: "${process.env.SLOT_USERS}" must be 1 to 256`);
  const created = [];
  for (let i = 0; i < count; i++) {
    const user = `${prefix}${i}`;
    const uid = SLOT_UID_BASE + i;
    const lines = passwd();
    if (lines.some((l) => l.startsWith(`${user}:`))) continue;
    const taken = lines.find((l) => l.split(':')[2] === String(uid));
    if (taken)
      throw new Error(
        `uid ${uid} for ${user} is already ${taken.split(':')[0]}'s: remove that user or pick another slotUidBase`,
      );
    addUser(user, ['--uid', String(uid), '--user-group']);
    created.push(user);
  }
  if (created.length > 0)
    say(`created ${created.length} slot users (${created[0]}…, uids from ${SLOT_UID_BASE}) that request slots run as`);
}

/** Where Debian's nftables puts nft (src/front/host/kernel-lock.ts looks there too). */
const NFT_PATHS = ['/usr/sbin/nft', '/sbin/nft', '/usr/bin/nft'];

/**
 * As root the service locks its slots' users to the egress guard's ports with
 * nftables (EGRESS_KERNEL_LOCK, on unless told) and refuses to start without nft:
 * installed here as root on Debian, as Chromium is.
 */
function ensureNftables() {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || process.platform !== 'linux' || process.env.EGRESS_KERNEL_LOCK?.trim() === 'off') return;
  if (NFT_PATHS.some((p) => existsSync(p))) return;
  if (!existsSync('/etc/debian_version') || !existsSync('/usr/bin/apt-get')) {
    say('nft is missing: install nftables, or the service (as root) refuses to start unless EGRESS_KERNEL_LOCK=off');
    return;
  }
  say("nft is missing; installing Debian's nftables package (apt-get) for the service's kernel lock");
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  aptUpdate(env);
  aptGet(['install', '-y', '--no-install-recommends', 'nftables'], env);
  if (!NFT_PATHS.some((p) => existsSync(p))) fail('apt-get installed nftables but nft is missing');
}

/**
 * As root on Debian with Debian's Chromium: its SUID sandbox helper
 * (chromium-sandbox), without which a slot's Chromium stays readable by the
 * slot's user (/health's slotNonDumpable says so).
 */
function ensureChromiumSandbox(chromiumPath) {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || process.platform !== 'linux' || !chromiumPath) return;
  const dir = dirname(chromiumPath);
  if (dir !== dirname(DEBIAN_CHROMIUM.shell.path) || existsSync(join(dir, 'chrome-sandbox'))) return;
  if (!existsSync('/etc/debian_version') || !existsSync('/usr/bin/apt-get')) return;
  say("Chromium's SUID sandbox helper is missing; installing Debian's chromium-sandbox package (apt-get)");
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  aptUpdate(env);
  aptGet(['install', '-y', '--no-install-recommends', 'chromium-sandbox'], env);
}

/**
 * The test files that run alone, each with nothing beside it, and why: they
 * measure memory or the time itself, or take a core or the machine for long.
 * Every other file runs side by side with one more (docs/development.md,
 * "Where the time goes"). Service instances side by side share nothing but the
 * machine: each listens on port 0, serves its fixtures on port 0 and has
 * its own temporary directories.
 */
const ALONE = {
  'test/e2e/slot/cdp-bound.test.ts': '100 MB page answers; asserts the slot process stays small',
  'test/e2e/slot/page-memory.test.ts':
    'pages that take up to PAGE_MEMORY_MB (256 MB) each way Chromium can hold memory',
  'test/e2e/sandbox/sandbox-memory.test.ts': 'isolates driven to their memory caps',
  'test/e2e/slot/request-host-work.test.ts': "asserts the slot process's peak memory growth (VmHWM)",
  'test/e2e/front/slot-runaway.test.ts': 'a script that holds a core in C++ for seconds past its deadline',
  'test/e2e/front/slot-isolation.test.ts': 'a slot frozen in a busy loop, a heap blown: a core and memory',
  'test/e2e/front/slot-left-work-billing.test.ts':
    'an isolate stuck in C++ holds a core for 10 s; asserts the CPU billed',
  'test/e2e/slot/console-flood.test.ts': 'console floods against the CPU budget',
  'test/e2e/slot/backlog-discard.test.ts': 'console floods of a known size into a held transport',
  'test/e2e/front/log-flood.test.ts': 'refusal loops of thousands a second',
  'test/e2e/sandbox/sandbox-time.test.ts': 'the time is what is tested: many timers side by side on a loaded machine',
  'test/e2e/front/tenancy.test.ts': "fairness under the default queue timeout: every slot busy to its script's limit",
  'test/e2e/slot/page-memory-neighbour.test.ts': 'page-memory bombs in two slots at once beside a third',
  'test/e2e/front/kernel-lock.test.ts': 'firewall tables on the machine, and services started and killed outright',
  'test/e2e/front/slot-escape.test.ts':
    "counts processes of the slot users machine-wide: another service's slots would be its strays",
};

/**
 * The files that run beside one other file even when end-to-end files run one
 * at a time (PAGESCRIPT_TEST_CONCURRENCY=1), and why: they start no Chromium and
 * no service (the unit files), or mostly wait, and what they wait for is not
 * the machine's time. Never beside an ALONE file.
 */
const BESIDE = {
  'test/unit/': 'no Chromium, no service, nothing measured against the clock of a loaded machine',
  'test/e2e/egress/egress-identity.test.ts':
    "a service left idle for a minute: what Chromium does on its own, not the machine's speed, is tested",
};
const isBeside = (file) => Object.keys(BESIDE).some((f) => (f.endsWith('/') ? file.startsWith(f) : file === f));

const [command = 'start', ...rest] = process.argv.slice(2);
const nodeBin = ensureNode();
// Unit tests and lint run no browser: they do not need one installed.
const chromium = ['test:unit', 'lint', 'build'].includes(command)
  ? process.env.PUPPETEER_EXECUTABLE_PATH
    ? { path: process.env.PUPPETEER_EXECUTABLE_PATH, mode: process.env.CHROMIUM }
    : undefined
  : ensureChromium();
// The bench measures raw Puppeteer on the full browser too, whichever Chromium the service runs: both are needed.
if (command === 'run' && rest[0] === 'scripts/bench/main.ts' && !existsSync(DEBIAN_CHROMIUM.full.path))
  installDebianChromium(DEBIAN_CHROMIUM.full);
ensureDependencies(nodeBin);
ensureServiceUsers();
// Unit tests, lint and the build run no service: they do not need nft.
if (!['test:unit', 'lint', 'build'].includes(command)) {
  ensureNftables();
  ensureChromiumSandbox(chromium?.path);
}
const env = withNodeOnPath(nodeBin, {
  ...(chromium ? { PUPPETEER_EXECUTABLE_PATH: chromium.path } : {}),
  ...(chromium?.mode ? { CHROMIUM: chromium.mode } : {}),
});
// isolated-vm requires --no-node-snapshot on Node 20 and later.
const nodeFlags = ['--no-node-snapshot'];

/**
 * Runs the long-lived command as a child and passes on the signals that stop it
 * (a process manager's SIGTERM reaches only this process), so the service shuts
 * down cleanly instead of being orphaned; exits with the child's status.
 */
function runForwardingSignals(cmd, args, opts) {
  const child = spawn(cmd, args, { stdio: 'inherit', cwd: ROOT, ...opts });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => child.kill(sig));
  }
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
  child.on('error', (e) => fail(`could not run ${cmd}: ${e.message}`));
}

let status;
switch (command) {
  case 'start':
    ensureBuild(nodeBin, false);
    // Two malloc arenas instead of glibc's 8 per core (isolates run on threads).
    // --expose-gc: the service collects its heap once after 5 s idle (src/front/service.ts).
    runForwardingSignals(nodeBin, [...nodeFlags, '--expose-gc', join(ROOT, 'dist', 'server.js'), ...rest], {
      env: { ...env, MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2' },
    });
    status = undefined;
    break;
  case 'build':
    ensureBuild(nodeBin, true);
    status = 0;
    break;
  case 'test': {
    ensureBuild(nodeBin, false);
    say('type-checking and linting (tsc, eslint, prettier --check), side by side');
    // Each is one thread: side by side they take the time of the longest (eslint's) instead of the sum (~50 s).
    await mustRunAll(nodeBin, [...typeChecks(), ...lintSteps()], env);
    // Named files: just those. Otherwise every test, unit and e2e, in one run
    // so that one coverage report covers both.
    const all = rest.length === 0;
    const files = all ? [...unitTests(), ...e2eTests()] : rest;
    status = runTests(nodeBin, env, files, { coverage: all, sideBySide: true });
    break;
  }
  case 'test:unit':
    ensureBuild(nodeBin, false);
    // One process for all unit files: no Chromium, no process to isolate a crash
    // from, and Node and tsx start once instead of once per file.
    status = runTests(nodeBin, env, rest.length > 0 ? rest : unitTests(), {
      isolation: 'none',
    });
    break;
  case 'test:e2e':
    ensureBuild(nodeBin, false);
    status = runTests(nodeBin, env, rest.length > 0 ? rest : e2eTests(), { sideBySide: true });
    break;
  case 'test:conformance':
    ensureBuild(nodeBin, false);
    status = runTests(nodeBin, env, rest.length > 0 ? rest : conformanceTests(), {});
    break;
  case 'lint':
    lint(nodeBin, env);
    status = 0;
    break;
  case 'run':
    ensureBuild(nodeBin, false);
    runForwardingSignals(nodeBin, [...nodeFlags, '--import', 'tsx', ...rest], { env });
    status = undefined;
    break;
  default:
    fail(`unknown command ${command} (start, build, test, test:unit, test:e2e, test:conformance, lint, run)`);
}
if (status !== undefined) process.exit(status);

/** The type checks: the service and tests, and the playground (it runs in a browser: its own tsconfig, the DOM's types). */
function typeChecks() {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  return [
    [tsc, '--noEmit', '-p', ROOT],
    [tsc, '--noEmit', '-p', join(ROOT, 'playground')],
  ];
}

/** ESLint with type information (zero warnings), and Prettier's check of the formatting. */
function lintSteps() {
  return [
    [join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js'), '--max-warnings=0', ROOT],
    [join(ROOT, 'node_modules', 'prettier', 'bin', 'prettier.cjs'), '--check', '--log-level=warn', ROOT],
  ];
}

function lint(nodeBin, env) {
  say('linting (eslint, prettier --check)');
  for (const args of lintSteps()) mustRun(nodeBin, args, { env });
}

/**
 * Runs each of `steps` (arguments to nodeBin) at once; each one's output is
 * printed whole when it ends (not interleaved), and the run fails, once all
 * have ended, if any failed.
 */
async function mustRunAll(nodeBin, steps, env) {
  const ends = steps.map(
    (args) =>
      new Promise((done) => {
        const child = spawn(nodeBin, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
        const out = [];
        child.stdout.on('data', (b) => out.push(b));
        child.stderr.on('data', (b) => out.push(b));
        child.on('error', (e) => done({ args, status: 1, out: Buffer.from(`could not run: ${e.message}\n`) }));
        child.on('close', (code, signal) => done({ args, status: code ?? (signal ? 1 : 0), out: Buffer.concat(out) }));
      }),
  );
  const failed = [];
  for (const { args, status, out } of await Promise.all(ends)) {
    if (out.length > 0) process.stderr.write(out);
    if (status !== 0) failed.push(`${relative(ROOT, args[0])} ${args.slice(1).join(' ')} exited with ${status}`);
  }
  if (failed.length > 0) fail(failed.join('; '));
}

/**
 * Runs test files with node:test: end-to-end files each in their own process
 * (one crash cannot hide another), unit files together when asked. Side by
 * side: two files at a time, but ALONE's files last and each by itself (the
 * lock of scripts/test-lock.mjs), in one run so that one coverage report covers
 * all. With coverage, Node's own (V8's) report of src/ and sandbox/ is printed
 * at the end; code that runs inside the isolates is not in it (see docs/development.md).
 * PAGESCRIPT_TEST_CONCURRENCY=2 runs end-to-end files side by side; the default stays 1
 * (one end-to-end file at a time) until a whole run side by side has been seen green
 * on CI's machine. Either way the run is --test-concurrency=2: BESIDE's files (the
 * unit files among them) run beside one other file, never beside an ALONE one.
 */
function runTests(nodeBin, env, files, { isolation = 'process', coverage = false, sideBySide = false }) {
  const concurrency = sideBySide ? 2 : 1;
  const asked = process.env.PAGESCRIPT_TEST_CONCURRENCY ?? '1';
  if (sideBySide && asked !== '1' && asked !== '2') fail(`PAGESCRIPT_TEST_CONCURRENCY is 1 or 2, not ${asked}`);
  const serial = asked === '1';
  const args = [...nodeFlags, '--enable-source-maps', '--import', 'tsx', '--test', `--test-concurrency=${concurrency}`];
  if (isolation !== 'process') args.push(`--test-isolation=${isolation}`);
  if (coverage) {
    args.push('--experimental-test-coverage', '--test-coverage-include=src/**', '--test-coverage-include=sandbox/**');
  }
  // Every caller built dist/ just before (ensureBuild): the services the tests start in-process fork
  // their slot and egress processes from it, as production does, not through tsx (~1 s less a start;
  // src/front/child-guard/child-start.ts childEntry).
  const testEnv = { ...env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent', PAGESCRIPT_CHILDREN_FROM_DIST: '1' };
  // A TAP copy beside the spec output: a file whose process died (a signal, an
  // exit code) shows only 'test failed' in the spec summary; the digest printed
  // last says how it died, where a CI log's tail can be read.
  // PAGESCRIPT_TEST_TAP=<file> keeps it there (each file's time is in it: docs/development.md).
  const tapDir = mkdtempSync(join(tmpdir(), 'pagescript-tap-'));
  const tapFile = process.env.PAGESCRIPT_TEST_TAP ? resolve(process.env.PAGESCRIPT_TEST_TAP) : join(tapDir, 'run.tap');
  args.push('--test-reporter=spec', '--test-reporter-destination=stdout');
  args.push('--test-reporter=tap', `--test-reporter-destination=${tapFile}`);
  let lockDir;
  if (concurrency > 1) {
    const isAlone = (f) => relative(ROOT, resolve(ROOT, f)) in ALONE;
    files = [...files.filter((f) => !isAlone(f)), ...files.filter(isAlone)];
    lockDir = mkdtempSync(join(tmpdir(), 'pagescript-tests-'));
    args.push('--import', pathToFileURL(join(ROOT, 'scripts', 'test-lock.mjs')).href);
    testEnv.PAGESCRIPT_TEST_LOCK = join(lockDir, 'lock');
    testEnv.PAGESCRIPT_TEST_ALONE = Object.keys(ALONE)
      .map((f) => join(ROOT, f))
      .join('\n');
    testEnv.PAGESCRIPT_TEST_SERIAL = serial ? '1' : '0';
    testEnv.PAGESCRIPT_TEST_BESIDE = files
      .map((f) => resolve(ROOT, f))
      .filter((f) => isBeside(relative(ROOT, f)))
      .join('\n');
  }
  try {
    const status = run(nodeBin, [...args, ...files], { stdio: 'inherit', env: testEnv });
    if (status !== 0) printFailureDigest(tapFile);
    return status;
  } finally {
    if (lockDir) rmSync(lockDir, { recursive: true, force: true });
    rmSync(tapDir, { recursive: true, force: true });
  }
}

/** Each failed test or file from the TAP copy, with how it ended (exit code, signal, error). */
function printFailureDigest(tapFile) {
  if (!existsSync(tapFile)) return;
  const lines = readFileSync(tapFile, 'utf8').split('\n');
  const out = [];
  for (let i = 0; i < lines.length && out.length < 60; i++) {
    if (!/^\s*not ok \d+ - /.test(lines[i])) continue;
    out.push(lines[i].trim());
    for (let j = i + 1; j < lines.length && !/^\s*\.\.\.$/.test(lines[j]); j++) {
      if (/^\s*(failureType|exitCode|signal|error|code|location):/.test(lines[j])) out.push(`    ${lines[j].trim()}`);
    }
  }
  if (out.length > 0) console.log(['', 'failures, as the TAP copy has them:', ...out].join('\n'));
}

/** test/unit: no Chromium. */
function unitTests() {
  return listTests(join(ROOT, 'test', 'unit'));
}

/** Everything else under test/ but the conformance suite: real Chromium. */
function e2eTests() {
  const apart = new Set([...unitTests(), ...conformanceTests()]);
  return listTests(join(ROOT, 'test')).filter((f) => !apart.has(f));
}

/** The conformance suite (Puppeteer's own page-level tests, ~12 minutes): a tier of its own, npm run test:conformance. */
function conformanceTests() {
  return listTests(join(ROOT, 'test', 'conformance'));
}

function listTests(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...listTests(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}
