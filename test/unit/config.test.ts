import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CHROMIUM_PATHS, chooseChromium, ConfigError, loadConfig } from '../../src/config.js';

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
