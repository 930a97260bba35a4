// A key's policy: what the key file may say, how it narrows the service's
// settings, and the refusals a request outside it gets before it is queued.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { loadConfig } from '../../../src/common/config.js';
import { ApiError } from '../../../src/common/errors.js';
import { hashKey, KeyFileError, parseKeyFile, writeKeyFile } from '../../../src/front/tenancy/keyfile.js';
import { checkAgainstPolicy, jobLimits, resolvePolicy } from '../../../src/front/tenancy/key-policy.js';
import { KeyRing } from '../../../src/front/tenancy/keyring.js';
import { silentLogger } from '../../../src/common/log.js';
import { hostAllowed, parseHostPattern, type HostPattern } from '../../../src/protocol/host-patterns.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'pagescript-policy-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const config = loadConfig({ SERVICE_MEMORY_MB: '4096' });

const fileWith = (policy: unknown): string =>
  JSON.stringify({ version: 1, keys: [{ name: 'acme', sha256: hashKey('k'), active: true, policy }] });

const refused = (fn: () => void, code: string, message: RegExp): void =>
  assert.throws(fn, (e: unknown) => e instanceof ApiError && e.code === code && message.test(e.message));

test('host patterns: a name, a wildcard below a name, a port; nothing else matches', () => {
  const p = (...texts: string[]): HostPattern[] => texts.map((t) => parseHostPattern(t) as HostPattern);
  const pats = p('acme.example', '*.shop.example', 'api.example:8443');
  assert.ok(hostAllowed(pats, 'acme.example', 443));
  assert.ok(hostAllowed(pats, 'ACME.example.', 80), 'case and a final dot do not matter');
  assert.ok(hostAllowed(pats, 'a.b.shop.example', 443));
  assert.ok(!hostAllowed(pats, 'shop.example', 443), 'a wildcard is for names below, not the name itself');
  assert.ok(!hostAllowed(pats, 'evilshop.example', 443), 'a wildcard matches whole labels');
  assert.ok(!hostAllowed(pats, 'acme.example.evil.test', 443));
  assert.ok(hostAllowed(pats, 'api.example', 8443));
  assert.ok(!hostAllowed(pats, 'api.example', 443), 'a pattern with a port matches that port only');
  assert.ok(hostAllowed(p('[2001:db8::1]:443'), '[2001:db8::1]', 443));
});

test('host patterns that are not one are refused: schemes, paths, upper case, bare stars, ports out of range', () => {
  for (const bad of [
    'http://a.example',
    'a.example/x',
    'A.example',
    '*',
    '*.',
    'a.*.example',
    'a.example:0',
    'a.example:70000',
    'ä.example',
    '',
  ])
    assert.equal(parseHostPattern(bad), undefined, bad);
});

test('a key file policy is checked field by field; a bad one makes the file invalid, naming the field', () => {
  const good = { scriptTimeoutMs: 10_000, pageMemoryMb: 256, hosts: ['*.acme.example'], outputFormats: ['json'] };
  const ok = parseKeyFile(fileWith(good));
  assert.deepEqual(ok.keys[0]?.policy, good);
  for (const [policy, field] of [
    [{ scriptTimeoutMs: 5 }, 'keys[0].policy.scriptTimeoutMs'],
    [{ maxLogLines: '256' }, 'keys[0].policy.maxLogLines'],
    [{ pageMemoryMb: 32 }, 'keys[0].policy.pageMemoryMb'],
    [{ scriptMemoryMb: 8.5 }, 'keys[0].policy.scriptMemoryMb'],
    [{ options: ['viewport', 'path'] }, 'keys[0].policy.options'],
    [{ outputFormats: [] }, 'keys[0].policy.outputFormats'],
    [{ hosts: ['http://acme.example'] }, 'keys[0].policy.hosts'],
    [{ cpuMs: 10 }, 'keys[0].policy.cpuMs'],
    ['strict', 'keys[0].policy'],
  ] as const)
    assert.throws(
      () => parseKeyFile(fileWith(policy)),
      (e: unknown) => e instanceof KeyFileError && e.message.includes(field),
      JSON.stringify(policy),
    );
});

test("a policy only narrows: each limit is the key's when lower, the service's otherwise", () => {
  const limits = jobLimits(
    resolvePolicy({
      scriptTimeoutMs: 10_000,
      navigationTimeoutMs: 600_000,
      maxResultBytes: 4096,
      scriptMemoryMb: 32,
      pageMemoryMb: 65_536,
    }),
    config,
  );
  assert.deepEqual(limits, { scriptTimeoutMs: 10_000, maxResultBytes: 4096, scriptMemoryMb: 32 });
  assert.equal(jobLimits(resolvePolicy({ outputFormats: ['json'] }), config), undefined);
  assert.equal(jobLimits(undefined, config), undefined);
});

test('a request asking more than its key allows is 400 INVALID_OPTIONS naming the field and the limit', () => {
  const policy = resolvePolicy({
    navigationTimeoutMs: 5000,
    options: ['viewport', 'navigationTimeoutMs'],
    outputFormats: ['json'],
  });
  const url = 'https://acme.example/';
  refused(
    () => checkAgainstPolicy(policy, { url, outputFormat: 'json', options: { navigationTimeoutMs: 6000 } }, config),
    'INVALID_OPTIONS',
    /options\.navigationTimeoutMs 6000 is above this key's limit of 5000 ms/,
  );
  refused(
    () => checkAgainstPolicy(policy, { url, outputFormat: 'json', options: { screenshotOnError: true } }, config),
    'INVALID_OPTIONS',
    /options\.screenshotOnError is not allowed for this key/,
  );
  refused(
    () => checkAgainstPolicy(policy, { url, outputFormat: 'html' }, config),
    'INVALID_OPTIONS',
    /outputFormat "html" is not allowed for this key/,
  );
  checkAgainstPolicy(
    policy,
    { url, outputFormat: 'json', options: { navigationTimeoutMs: 5000, viewport: { width: 10, height: 10 } } },
    config,
  );
});

test("a URL outside the key's hosts is 400 SCRAPING_FAILED saying so; the key's own hosts pass", () => {
  const policy = resolvePolicy({ hosts: ['*.acme.example', 'acme.example'] });
  refused(
    () => checkAgainstPolicy(policy, { url: 'https://other.example/', outputFormat: 'json' }, config),
    'SCRAPING_FAILED',
    /other\.example is outside this key's hosts/,
  );
  refused(
    () => checkAgainstPolicy(policy, { url: 'http://127.0.0.1:3000/', outputFormat: 'json' }, config),
    'SCRAPING_FAILED',
    /outside this key's hosts/,
  );
  checkAgainstPolicy(policy, { url: 'https://www.acme.example/p?q=1', outputFormat: 'json' }, config);
  checkAgainstPolicy(policy, { url: 'https://acme.example:8443/', outputFormat: 'json' }, config);
});

test('the key ring hands each key its policy; a key without one gets none', () => {
  const file = join(dir, 'ring.json');
  writeKeyFile(file, {
    version: 1,
    keys: [
      { name: 'acme', sha256: hashKey('ka'), active: true, policy: { hosts: ['acme.example'] } },
      { name: 'free', sha256: hashKey('kf'), active: true },
    ],
  });
  const keys = new KeyRing({
    envKeys: [],
    file,
    defaultRateLimit: 60,
    defaultRateLimitWindowMs: 60_000,
    logger: silentLogger(),
  });
  keys.start();
  try {
    assert.deepEqual(keys.verify('ka')?.policy?.policy, { hosts: ['acme.example'] });
    assert.ok(keys.verify('ka')?.policy?.hosts?.[0]);
    assert.equal(keys.verify('kf')?.policy, undefined);
  } finally {
    keys.close();
  }
});

test('npm run key -- policy: written and listed; a value above the service, or a bad field, is named and nothing is written', async () => {
  const file = join(dir, 'tool.json');
  const key = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', 'scripts/key.ts', ...args, '--file', file], {
      env: {
        ...process.env,
        SCRIPT_TIMEOUT_MS: '30000',
        SCRIPT_MEMORY_MB: '128',
        PAGE_MEMORY_MB: '512',
        SERVICE_MEMORY_MB: '4096',
      },
    });
  await key('create', '--name', 'acme');
  const out = await key(
    'policy',
    '--name',
    'acme',
    '--script-timeout-ms',
    '10000',
    '--hosts',
    'Acme.example,*.acme.example',
    '--script-memory-mb',
    '32',
    '--page-memory-mb',
    '128',
  );
  assert.match(
    out.stdout,
    /policy scriptTimeoutMs=10000 scriptMemoryMb=32 pageMemoryMb=128 hosts=acme\.example,\*\.acme\.example/,
  );
  const before = readFileSync(file, 'utf8');
  await assert.rejects(key('policy', '--name', 'acme', '--script-timeout-ms', '40000'), (e: { stderr: string }) =>
    /--script-timeout-ms 40000 is above the service's SCRIPT_TIMEOUT_MS \(30000\)/.test(e.stderr),
  );
  await assert.rejects(key('policy', '--name', 'acme', '--page-memory-mb', '1024'), (e: { stderr: string }) =>
    /--page-memory-mb 1024 is above the service's PAGE_MEMORY_MB \(512\)/.test(e.stderr),
  );
  await assert.rejects(key('policy', '--name', 'acme', '--script-memory-mb', '8'), (e: { stderr: string }) =>
    /--script-memory-mb: a whole number from 16 to 4096/.test(e.stderr),
  );
  await assert.rejects(key('policy', '--name', 'acme', '--options', 'viewport,path'), (e: { stderr: string }) =>
    /--options: /.test(e.stderr),
  );
  assert.equal(readFileSync(file, 'utf8'), before, 'nothing written');
  assert.match(
    (await key('list')).stdout,
    /acme\tactive.*policy scriptTimeoutMs=10000 scriptMemoryMb=32 pageMemoryMb=128/,
  );
  await key(
    'policy',
    '--name',
    'acme',
    '--script-timeout-ms',
    'default',
    '--hosts',
    'any',
    '--script-memory-mb',
    'default',
    '--page-memory-mb',
    'default',
  );
  assert.equal(parseKeyFile(readFileSync(file, 'utf8')).keys[0]?.policy, undefined);
});

test('npm run key -- policy --security-threshold: lowers the threshold; above SECURITY_THRESHOLD is refused', async () => {
  const file = join(dir, 'tool-security.json');
  const key = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', 'scripts/key.ts', ...args, '--file', file], {
      env: { ...process.env, SECURITY_THRESHOLD: '200', SERVICE_MEMORY_MB: '4096' },
    });
  await key('create', '--name', 'acme');
  assert.match((await key('policy', '--name', 'acme', '--security-threshold', '50')).stdout, /securityThreshold=50/);
  await assert.rejects(key('policy', '--name', 'acme', '--security-threshold', '500'), (e: { stderr: string }) =>
    /--security-threshold 500 is above the service's SECURITY_THRESHOLD \(200\)/.test(e.stderr),
  );
  assert.equal(parseKeyFile(readFileSync(file, 'utf8')).keys[0]?.policy?.securityThreshold, 50);
  // No block yet: events says so, and unblock has nothing to end.
  const events = JSON.parse((await key('events', '--name', 'acme')).stdout) as { blocks: number; score: number };
  assert.deepEqual([events.blocks, events.score], [0, 0]);
  assert.match((await key('unblock', '--name', 'acme')).stdout, /acme: was not blocked/);
});
