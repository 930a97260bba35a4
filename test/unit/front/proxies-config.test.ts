// Upstream proxies on the front's side (issue 23 point 1): the PROXIES setting,
// options.proxy, what each key may use (the key file, npm run key), and that
// the credentials go to the egress guard's start only, never in a job.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { ConfigError, loadConfig, parseProxies } from '../../../src/common/config.js';
import { requestProxy } from '../../../src/front/http/validate.js';
import { egressInitMessage } from '../../../src/front/egress-process/egress-supervisor.js';
import { egressInit } from '../../../src/protocol/egress-messages.js';
import { slotConfig } from '../../../src/protocol/slot-wire.js';
import { silentLogger } from '../../../src/common/log.js';
import { chooseProxy, OptionsError, parseRequestOptions } from '../../../src/protocol/request-options.js';
import { slotInit } from '../../../src/front/slots/supervisor.js';
import { hashKey, parseKeyFile } from '../../../src/front/tenancy/keyfile.js';
import { KeyRing } from '../../../src/front/tenancy/keyring.js';

const SECRET = 'pw-7Hq2;@,/x';
const PLAIN_SECRET = 'Sekrit-9f8e1d';
const dir = mkdtempSync(join(tmpdir(), 'pagescript-proxies-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('PROXIES names proxies: http, https and socks5 URLs with user and password, and the may-resolve flag', () => {
  const problems: string[] = [];
  const proxies = parseProxies(
    [
      `de=http://alice:${encodeURIComponent(SECRET)}@Proxy.Example:3128`,
      'tls=https://bob:pw@proxy.example',
      'geo=socks5://carol:pw@10.0.0.5:1080;resolve',
      'open=socks5://[::1]:1081',
    ].join(' , '),
    problems,
  );
  assert.deepEqual(problems, []);
  assert.deepEqual(proxies, [
    {
      name: 'de',
      protocol: 'http',
      host: 'proxy.example',
      port: 3128,
      username: 'alice',
      password: SECRET,
      mayResolve: false,
    },
    {
      name: 'tls',
      protocol: 'https',
      host: 'proxy.example',
      port: 443,
      username: 'bob',
      password: 'pw',
      mayResolve: false,
    },
    {
      name: 'geo',
      protocol: 'socks5',
      host: '10.0.0.5',
      port: 1080,
      username: 'carol',
      password: 'pw',
      mayResolve: true,
    },
    { name: 'open', protocol: 'socks5', host: '::1', port: 1081, mayResolve: false },
  ]);
});

test('without PROXIES there are no proxies', () => {
  assert.deepEqual(loadConfig({}).proxies, []);
});

test('a bad PROXIES entry is named by its position and name, never by its text: the password stays out of the error', () => {
  const bad = [
    `dup=http://u:${PLAIN_SECRET}@h:1`,
    `dup=http://u:${PLAIN_SECRET}@h:2`,
    `ftp=ftp://u:${PLAIN_SECRET}@h:21`,
    `path=http://u:${PLAIN_SECRET}@h:1/x`,
    `half=http://u@h:1`,
    `comma=http://u:pa,ss@h:1`,
    `bad name=http://u:${PLAIN_SECRET}@h:1`,
  ].join(',');
  let error: unknown;
  try {
    loadConfig({ PROXIES: bad });
  } catch (e) {
    error = e;
  }
  assert.ok(error instanceof ConfigError);
  const text = error.message;
  assert.ok(!text.includes(PLAIN_SECRET), text);
  assert.ok(!text.includes('pa,ss') && !text.includes('ss@h'), text);
  for (const p of [
    'entry 2 ("dup"): the name is used twice',
    'entry 3 ("ftp"): the URL must be http://, https:// or socks5://',
    'entry 4 ("path")',
    'entry 5 ("half"): give both a user and a password, or neither',
    'entry 7 is not name=URL',
    'entry 8 is not name=URL',
  ])
    assert.ok(text.includes(p), `${p} in\n${text}`);
});

test('the slot process is given no proxy: the credentials go to the egress guard at its start, by themselves', () => {
  const config = loadConfig({ PROXIES: `de=http://alice:${encodeURIComponent(SECRET)}@proxy.example:3128` });
  const toSlot = slotConfig(config);
  assert.deepEqual(toSlot.proxies, []);
  assert.ok(!JSON.stringify(toSlot).includes(encodeURIComponent(SECRET)));
  assert.ok(!JSON.stringify(toSlot).includes('alice'));
  assert.equal(egressInit(config).proxies[0]?.password, SECRET);
});

test("the init message the front sends a slot process carries no proxy URL, user or password; the egress process's carries them", () => {
  const config = loadConfig({
    PROXIES: `de=http://alice:${encodeURIComponent(SECRET)}@proxy.example:3128,geo=socks5://carol:${PLAIN_SECRET}@10.0.0.5:1080;resolve`,
  });
  const seam = { loopbackOnly: true, reportDials: true, faults: true, hosts: { 'x.test': [['127.0.0.1']] } };
  const toSlot = JSON.stringify(slotInit(config, 'info', 40_000, seam));
  for (const s of [SECRET, encodeURIComponent(SECRET), PLAIN_SECRET, 'alice', 'carol', 'proxy.example', '10.0.0.5'])
    assert.ok(!toSlot.includes(s), `${s} in the slot process's init`);
  const toEgress = egressInitMessage(config, 'info', 3000, 0, seam);
  assert.deepEqual(
    toEgress.egress.proxies.map((p) => [p.name, p.password]),
    [
      ['de', SECRET],
      ['geo', PLAIN_SECRET],
    ],
  );
});

test('options.proxy is a name, never a URL', () => {
  assert.equal(parseRequestOptions({ proxy: 'de' }, 'http://example.com/').proxy, 'de');
  for (const bad of ['http://u:p@h:1', 'socks5://h:1', '', 'a b', 42, {}]) {
    assert.throws(
      () => parseRequestOptions({ proxy: bad }, 'http://example.com/'),
      (e: unknown) => e instanceof OptionsError && e.field === 'options.proxy',
      String(bad),
    );
  }
});

test("chooseProxy: the request's choice if the key may use it, else its key's default; one answer for unknown and not allowed", () => {
  const configured = ['de', 'us', 'geo'];
  assert.equal(chooseProxy(undefined, { allowed: 'all' }, configured), undefined);
  assert.equal(chooseProxy(undefined, { defaultProxy: 'de', allowed: [] }, configured), 'de');
  assert.equal(chooseProxy('us', { allowed: 'all' }, configured), 'us');
  assert.equal(chooseProxy('us', { defaultProxy: 'de', allowed: ['us'] }, configured), 'us');
  assert.equal(chooseProxy('de', { defaultProxy: 'de', allowed: [] }, configured), 'de', 'the default is allowed');
  const refused = (name: string, allowed: readonly string[] | 'all'): void => {
    assert.throws(
      () => chooseProxy(name, { allowed }, configured),
      (e: unknown) =>
        e instanceof OptionsError &&
        e.field === 'options.proxy' &&
        e.message === `options.proxy "${name}" is not a proxy this key may use`,
    );
  };
  refused('geo', ['de', 'us']);
  refused('nowhere', 'all');
  refused('nowhere', ['nowhere']);
});

test('the job a slot process receives names the proxy, without options.proxy or any credential', () => {
  const job = requestProxy(
    { url: 'http://example.com/', outputFormat: 'json', options: { proxy: 'de', userAgent: 'x' } },
    { allowed: ['de'] },
    loadConfig({ PROXIES: `de=http://alice:${encodeURIComponent(SECRET)}@proxy.example:3128` }).proxies,
  );
  assert.deepEqual(job, {
    url: 'http://example.com/',
    outputFormat: 'json',
    options: { userAgent: 'x' },
    proxy: 'de',
  });
  assert.throws(
    () =>
      requestProxy({ url: 'http://example.com/', outputFormat: 'json', options: { proxy: 'de' } }, { allowed: [] }, []),
    (e: { code?: string; message?: string }) =>
      e.code === 'INVALID_OPTIONS' &&
      e.message === 'Invalid options: options.proxy "de" is not a proxy this key may use',
  );
});

test('a key file gives each key a default proxy and the proxies it may use; API_KEYS keys may use every one', () => {
  const file = join(dir, 'keys.json');
  writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      keys: [
        { name: 'acme', sha256: hashKey('ps_acme_key_0123456789'), active: true, proxy: 'de', proxies: ['us'] },
        { name: 'all', sha256: hashKey('ps_all_key_0123456789'), active: true, proxies: ['*'] },
        { name: 'none', sha256: hashKey('ps_none_key_0123456789'), active: true },
      ],
    }),
  );
  const ring = new KeyRing({
    envKeys: ['env-key-0123456789abcdef'],
    file,
    defaultRateLimit: 60,
    defaultRateLimitWindowMs: 60_000,
    logger: silentLogger(),
    proxyNames: ['de', 'us'],
  });
  ring.start();
  try {
    const acme = ring.verify('ps_acme_key_0123456789');
    assert.equal(acme?.defaultProxy, 'de');
    assert.deepEqual(acme?.allowed, ['us']);
    assert.equal(ring.verify('ps_all_key_0123456789')?.allowed, 'all');
    assert.deepEqual(ring.verify('ps_none_key_0123456789')?.allowed, []);
    assert.equal(ring.verify('ps_none_key_0123456789')?.defaultProxy, undefined);
    assert.equal(ring.verify('env-key-0123456789abcdef')?.allowed, 'all');
  } finally {
    ring.close();
  }
});

test('a key file naming a proxy that is not in PROXIES is refused like any invalid file', () => {
  const file = join(dir, 'unknown.json');
  writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      keys: [
        {
          name: 'acme',
          sha256: hashKey('ps_acme_key_0123456789'),
          active: true,
          proxy: 'mars',
          proxies: ['de', 'venus'],
        },
      ],
    }),
  );
  const ring = new KeyRing({
    envKeys: [],
    file,
    defaultRateLimit: 60,
    defaultRateLimitWindowMs: 60_000,
    logger: silentLogger(),
    proxyNames: ['de'],
  });
  assert.throws(
    () => ring.start(),
    (e: Error) =>
      e.message.includes('keys[0].proxy: "mars" is not a proxy in PROXIES') &&
      e.message.includes('keys[0].proxies: "venus" is not a proxy in PROXIES'),
  );
  ring.close();
  assert.throws(
    () =>
      parseKeyFile(
        JSON.stringify({
          version: 1,
          keys: [{ name: 'x', sha256: hashKey('k'), active: true, proxy: 'http://h:1', proxies: 'de' }],
        }),
      ),
    (e: Error) => e.message.includes('keys[0].proxy:') && e.message.includes('keys[0].proxies:'),
  );
});

test('npm run key: create with a default proxy and a list, shown by list; proxies changes and clears them', async () => {
  const file = join(dir, 'tool.json');
  const run = promisify(execFile);
  const tool = (...args: string[]): Promise<{ stdout: string; stderr: string }> =>
    run(process.execPath, ['--import', 'tsx', 'scripts/key.ts', ...args, '--file', file], {
      env: { ...process.env, API_KEYS_FILE: '' },
    });
  await tool('create', '--name', 'acme', '--proxy', 'de', '--proxies', 'us,geo');
  assert.match(
    (await tool('list')).stdout,
    /^acme\tactive\trate default\tconcurrency default\tproxy de\tproxies us,geo\t/,
  );
  const rec = (): unknown => parseKeyFile(readFileSync(file, 'utf8')).keys[0];
  assert.equal((rec() as { proxy?: string }).proxy, 'de');
  await tool('proxies', '--name', 'acme', '--proxies', '*');
  assert.deepEqual((rec() as { proxies?: string[] }).proxies, ['*']);
  await tool('proxies', '--name', 'acme', '--proxy', 'none', '--proxies', 'none');
  assert.match((await tool('list')).stdout, /\tproxy -\tproxies -\t/);
  await assert.rejects(tool('create', '--name', 'b', '--proxy', 'http://u:p@h:1'), (e: { stderr: string }) =>
    /--proxy "http:\/\/u:p@h:1" is not a proxy's name/.test(e.stderr),
  );
});
