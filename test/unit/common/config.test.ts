import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import {
  CHROMIUM_PATHS,
  chooseChromium,
  ConfigError,
  JOB_CLOSE_MARGIN_MS,
  loadConfig,
} from '../../../src/common/config.js';
import { docSection } from '../../helpers/docs.js';

test('defaults: port 3000 on 127.0.0.1, 30 s scripts, 128 MiB, no keys (one is generated at start)', () => {
  const c = loadConfig({});
  assert.equal(c.port, 3000);
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.scriptTimeoutMs, 30_000);
  assert.equal(c.scriptMemoryMb, 128);
  assert.deepEqual(c.apiKeys, []);
  assert.deepEqual(c.egressAllowlist, []);
  assert.ok(c.maxConcurrency >= 1);
  assert.ok(Object.isFrozen(c));
});

test('each bad value is named in one error that lists them all', () => {
  assert.throws(
    () =>
      loadConfig({
        PORT: 'abc',
        SCRIPT_MEMORY_MB: '1',
        LOG_LEVEL: 'loud',
        API_KEYS: 'short',
        EGRESS_ALLOWLIST: 'nohost',
      }),
    (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      for (const name of ['PORT', 'SCRIPT_MEMORY_MB', 'LOG_LEVEL', 'API_KEYS', 'EGRESS_ALLOWLIST'])
        assert.match(e.message, new RegExp(name));
      assert.equal(e.problems.length, 5);
      return true;
    },
  );
});

test('EGRESS_ALLOWLIST takes host:port and [v6]:port, lower-cased', () => {
  const c = loadConfig({ EGRESS_ALLOWLIST: ' 127.0.0.1:8080, [::1]:9000 ,Intranet.Local:80' });
  assert.deepEqual(c.egressAllowlist, [
    { host: '127.0.0.1', port: 8080 },
    { host: '::1', port: 9000 },
    { host: 'intranet.local', port: 80 },
  ]);
  assert.throws(() => loadConfig({ EGRESS_ALLOWLIST: '127.0.0.1:99999' }), /EGRESS_ALLOWLIST/);
});

test('API_KEYS is split on commas, trimmed and de-duplicated', () => {
  const c = loadConfig({ API_KEYS: 'aaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbb,aaaaaaaaaaaaaaaa' });
  assert.deepEqual(c.apiKeys, ['aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb']);
});

test('the edge: headers 20 s, whole request 30 s, idle keep-alive 10 s, stalled reply 30 s, 1024 connections in 1 GiB', () => {
  const c = loadConfig({ SERVICE_MEMORY_MB: '1024' });
  assert.equal(c.headersTimeoutMs, 20_000);
  assert.equal(c.requestTimeoutMs, 30_000);
  assert.equal(c.keepAliveTimeoutMs, 10_000);
  assert.equal(c.replyStallTimeoutMs, 30_000);
  assert.equal(c.maxConnections, 1024);
  assert.throws(
    () => loadConfig({ HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '4000' }),
    /REQUEST_TIMEOUT_MS: 4000 must not be less than HEADERS_TIMEOUT_MS/,
  );
});

test('connections per address default to an eighth of MAX_CONNECTIONS (at least one)', () => {
  const byMemory = loadConfig({});
  assert.equal(byMemory.maxConnectionsPerAddress, Math.max(1, Math.floor(byMemory.maxConnections / 8)));
  assert.equal(loadConfig({ SERVICE_MEMORY_MB: '1024' }).maxConnectionsPerAddress, 128);
  assert.equal(loadConfig({ MAX_CONNECTIONS: '4000' }).maxConnectionsPerAddress, 500);
  assert.equal(loadConfig({ MAX_CONNECTIONS: '3' }).maxConnectionsPerAddress, 1);
});

test('replies held for their readers default to two full-size replies per script slot, and must fit one', () => {
  const c = loadConfig({ MAX_CONCURRENCY: '3', MAX_RESULT_BYTES: String(4 * 1024 * 1024) });
  assert.equal(c.replyMemoryBytes, 2 * 3 * 4 * 1024 * 1024);
  assert.throws(
    () => loadConfig({ MAX_RESULT_BYTES: String(8 * 1024 * 1024), REPLY_MEMORY_BYTES: String(4 * 1024 * 1024) }),
    /REPLY_MEMORY_BYTES: 4194304 must not be less than MAX_RESULT_BYTES/,
  );
});

test('fairness by default: the queue timeout outlasts the longest job (navigation + script + closing), whatever those limits are', () => {
  const longestJob = (c: { navigationTimeoutMs: number; scriptTimeoutMs: number }): number =>
    c.navigationTimeoutMs + c.scriptTimeoutMs + JOB_CLOSE_MARGIN_MS;
  const defaults = loadConfig({});
  assert.equal(defaults.queueTimeoutMs, 60_000);
  assert.ok(defaults.queueTimeoutMs >= longestJob(defaults));
  const long = loadConfig({ SCRIPT_TIMEOUT_MS: '120000', NAVIGATION_TIMEOUT_MS: '30000' });
  assert.ok(long.queueTimeoutMs >= longestJob(long), String(long.queueTimeoutMs));
  // An explicit setting is the operator's choice.
  assert.equal(loadConfig({ QUEUE_TIMEOUT_MS: '5000' }).queueTimeoutMs, 5000);
});

test('a drain finishes every admitted request by default: the grace covers a wait for a slot and then a whole job', () => {
  const longestJob = (c: { navigationTimeoutMs: number; scriptTimeoutMs: number }): number =>
    c.navigationTimeoutMs + c.scriptTimeoutMs + JOB_CLOSE_MARGIN_MS;
  const defaults = loadConfig({});
  assert.equal(defaults.shutdownGraceMs, 120_000);
  assert.equal(defaults.shutdownGraceMs, defaults.queueTimeoutMs + longestJob(defaults));
  const short = loadConfig({ QUEUE_TIMEOUT_MS: '5000', SCRIPT_TIMEOUT_MS: '10000' });
  assert.equal(short.shutdownGraceMs, 5000 + longestJob(short));
  // Never past the setting's own ceiling; an explicit setting is the operator's choice.
  assert.equal(loadConfig({ QUEUE_TIMEOUT_MS: '1800000' }).shutdownGraceMs, 600_000);
  assert.equal(loadConfig({ SHUTDOWN_GRACE_MS: '10000' }).shutdownGraceMs, 10_000);
});

test('an invalid SHUTDOWN_GRACE_MS stops the start with a message naming it', () => {
  assert.throws(() => loadConfig({ SHUTDOWN_GRACE_MS: 'soon' }), /SHUTDOWN_GRACE_MS/);
  assert.throws(() => loadConfig({ SHUTDOWN_GRACE_MS: '700000' }), /SHUTDOWN_GRACE_MS/);
});

test("every default the configuration table (docs/configuration.md) states is the code's default", () => {
  const section = docSection('docs/configuration.md', '# Configuration');
  const stated = [...section.matchAll(/^\| `([A-Z_]+)` \| `([^`]*)` \|/gm)].map((m): [string, string] => [
    m[1] as string,
    m[2] as string,
  ]);
  assert.ok(stated.length >= 15, `only ${stated.length} defaults found`);
  const defaults = loadConfig({});
  for (const [name, value] of stated) {
    // Setting a variable to its documented default changes nothing.
    assert.deepEqual(loadConfig({ [name]: value }), defaults, `${name}=${value}`);
  }
});

test("Debian's two Chromium paths are package.json's pagescript fields (scripts/bootstrap.mjs reads them too)", () => {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    pagescript: { chromiumPath: string; chromiumShellPath: string };
  };
  assert.equal(CHROMIUM_PATHS.full, pkg.pagescript.chromiumPath);
  assert.equal(CHROMIUM_PATHS.shell, pkg.pagescript.chromiumShellPath);
  assert.equal(loadConfig({ CHROMIUM: 'full' }).executablePath, pkg.pagescript.chromiumPath);
});

test('Chromium: the headless shell by default where it is installed, else the full browser', () => {
  const only =
    (...paths: string[]) =>
    (p: string) =>
      paths.includes(p);
  assert.deepEqual(chooseChromium({}, [], only(CHROMIUM_PATHS.shell, CHROMIUM_PATHS.full)), {
    chromium: 'shell',
    executablePath: '/usr/lib/chromium/chromium-headless-shell',
  });
  assert.deepEqual(chooseChromium({}, [], only(CHROMIUM_PATHS.full)), {
    chromium: 'full',
    executablePath: '/usr/lib/chromium/chromium',
  });
  // Neither installed: the default, so that the start-up error names the shell's path.
  assert.equal(chooseChromium({}, [], only()).chromium, 'shell');
});

test('CHROMIUM=full chooses the full browser even where the shell is installed', () => {
  const problems: string[] = [];
  assert.deepEqual(
    chooseChromium({ CHROMIUM: ' Full ' }, problems, () => true),
    {
      chromium: 'full',
      executablePath: '/usr/lib/chromium/chromium',
    },
  );
  assert.deepEqual(problems, []);
});

test('PUPPETEER_EXECUTABLE_PATH wins over the Debian path; its mode is CHROMIUM or read from its name', () => {
  const none = (): boolean => false;
  assert.deepEqual(
    chooseChromium({ PUPPETEER_EXECUTABLE_PATH: '/opt/chrome-headless-shell/linux64/chrome-headless-shell' }, [], none),
    {
      chromium: 'shell',
      executablePath: '/opt/chrome-headless-shell/linux64/chrome-headless-shell',
    },
  );
  assert.equal(chooseChromium({ PUPPETEER_EXECUTABLE_PATH: '/opt/google/chrome/chrome' }, [], none).chromium, 'full');
  assert.deepEqual(chooseChromium({ PUPPETEER_EXECUTABLE_PATH: '/opt/hs', CHROMIUM: 'shell' }, [], none), {
    chromium: 'shell',
    executablePath: '/opt/hs',
  });
});

test('CHROMIUM other than shell or full is a configuration error', () => {
  assert.throws(() => loadConfig({ CHROMIUM: 'chrome' }), /CHROMIUM: "chrome" must be shell or full/);
});

test('settings that are gone are refused with what replaces them (EXECUTORS, EXECUTOR_USER, IDLE_CHROMIUM_CLOSE_MS)', () => {
  assert.throws(
    () => loadConfig({ EXECUTORS: '2' }),
    /EXECUTORS is gone: every request slot .* a slot process of its own/,
  );
  assert.throws(() => loadConfig({ EXECUTOR_USER: 'x' }), /EXECUTOR_USER is gone: .*SLOT_USER_PREFIX/);
  assert.throws(() => loadConfig({ IDLE_CHROMIUM_CLOSE_MS: '0' }), /IDLE_CHROMIUM_CLOSE_MS is now IDLE_SLOT_CLOSE_MS/);
  // Empty is unset.
  assert.equal(loadConfig({ EXECUTORS: '' }).maxConcurrency, loadConfig({}).maxConcurrency);
});

test("the egress process's user may not be a slot's", () => {
  assert.throws(() => loadConfig({ EGRESS_USER: 'pagescript-slot-3' }), /EGRESS_USER: .* must not be a slot's user/);
  assert.throws(
    () => loadConfig({ SLOT_USER_PREFIX: 'eg-', EGRESS_USER: 'eg-0' }),
    /EGRESS_USER: .* must not be a slot's user/,
  );
  assert.throws(() => loadConfig({ SLOT_USER_PREFIX: 'Bad Prefix' }), /SLOT_USER_PREFIX/);
});

test("CPU_PROFILE_DIR is an absolute directory for the children's CPU profiles; unset, none", () => {
  assert.equal(loadConfig({ CPU_PROFILE_DIR: ' /tmp/profiles ' }).cpuProfileDir, '/tmp/profiles');
  assert.equal(loadConfig({}).cpuProfileDir, undefined);
  assert.throws(() => loadConfig({ CPU_PROFILE_DIR: 'profiles' }), /CPU_PROFILE_DIR: must be an absolute path/);
});
