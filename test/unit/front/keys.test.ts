// API keys: the key file, the key ring that watches it, and `npm run key`.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { after, mock, test } from 'node:test';
import { promisify } from 'node:util';
import { createLogger, silentLogger, type Logger } from '../../../src/common/log.js';
import {
  hashKey,
  KeyFileError,
  parseKeyFile,
  parseRate,
  writeKeyFile,
  type KeyRecord,
} from '../../../src/front/tenancy/keyfile.js';
import { KeyRing } from '../../../src/front/tenancy/keyring.js';
import { until } from '../../helpers/wait.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'pagescript-keys-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const KEY_A = 'ps_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
const KEY_B = 'ps_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
const record = (name: string, key: string, extra: Partial<KeyRecord> = {}): KeyRecord => ({
  name,
  sha256: hashKey(key),
  active: true,
  ...extra,
});

/** Writes the file as `npm run key` does: whole, then renamed over the old one. */
const writeKeys = (file: string, keys: KeyRecord[]): void => writeKeyFile(file, { version: 1, keys });

function ring(file: string | undefined, envKeys: string[] = [], logger: Logger = silentLogger()): KeyRing {
  return new KeyRing({
    envKeys,
    file,
    defaultRateLimit: 60,
    defaultRateLimitWindowMs: 60_000,
    logger,
    pollMs: 50,
  });
}

test('rates are read as N/unit', () => {
  assert.deepEqual(parseRate('60/min'), { limit: 60, windowMs: 60_000 });
  assert.deepEqual(parseRate('5/s'), { limit: 5, windowMs: 1000 });
  assert.deepEqual(parseRate('1000/day'), { limit: 1000, windowMs: 86_400_000 });
  assert.deepEqual(parseRate('10/1500ms'), { limit: 10, windowMs: 1500 });
  assert.deepEqual(parseRate('100/15min'), { limit: 100, windowMs: 900_000 });
  for (const bad of ['60', '0/min', '5/fortnight', '5/10ms', '-1/s', '1/2day'])
    assert.equal(parseRate(bad), undefined, bad);
});

test('a key file with problems is refused, naming each problem', () => {
  assert.throws(() => parseKeyFile('{'), KeyFileError);
  assert.throws(() => parseKeyFile('[]'), /expected an object/);
  const bad = JSON.stringify({
    version: 1,
    keys: [
      { name: 'ok', sha256: hashKey(KEY_A), active: true },
      { name: 'ok', sha256: hashKey(KEY_B), active: true },
      { name: 'bad name!', sha256: 'xyz', active: 'yes', rateLimit: 0, maxConcurrency: 1.5 },
    ],
  });
  assert.throws(
    () => parseKeyFile(bad),
    (e: Error) =>
      [
        '"ok" is used twice',
        'keys[2].name',
        'keys[2].sha256',
        'keys[2].active',
        'keys[2].rateLimit',
        'keys[2].maxConcurrency',
      ].every((p) => e.message.includes(p)),
  );
});

test('keys from API_KEYS and the file are accepted; unknown and inactive ones are not', () => {
  const file = join(dir, 'accept.json');
  writeKeys(file, [
    record('acme', KEY_A, { rateLimit: 5, rateLimitWindowMs: 1000, maxConcurrency: 2 }),
    record('gone', KEY_B, { active: false }),
  ]);
  const keys = ring(file, ['env-key-0123456789abcdef']);
  keys.start();
  try {
    assert.deepEqual(keys.verify(KEY_A), {
      name: 'acme',
      rateLimit: 5,
      rateLimitWindowMs: 1000,
      maxConcurrency: 2,
      defaultProxy: undefined,
      allowed: [],
      policy: undefined,
    });
    assert.equal(keys.verify(KEY_B), undefined, 'an inactive key is refused');
    assert.equal(keys.verify('ps_unknown'), undefined);
    const env = keys.verify('env-key-0123456789abcdef');
    // Named by position, nothing derived from the key (a hash prefix in the logs is an oracle for short keys).
    assert.equal(env?.name, 'env-1');
    assert.equal(env?.rateLimit, 60);
    assert.equal(env?.maxConcurrency, undefined);
    assert.equal(keys.activeKeys, 2);
  } finally {
    keys.close();
  }
});

test('a wrong key costs one digest lookup, not a comparison with every key: no scan an unauthenticated client can make the front do', () => {
  const file = join(dir, 'many.json');
  const many = Array.from({ length: 5000 }, (_, i) => record(`tenant-${i}`, `ps_tenant_key_${i}_0123456789abcdef`));
  writeKeys(file, [...many, record('revoked', KEY_B, { active: false })]);
  const keys = ring(file, [KEY_A, KEY_B]);
  keys.start();
  const compare = mock.method(crypto, 'timingSafeEqual');
  syncBuiltinESMExports();
  try {
    assert.equal(keys.verify('ps_wrong_key_0123456789abcdef'), undefined);
    assert.equal(compare.mock.callCount(), 0, 'no entry compared for an unknown key');
    assert.equal(keys.verify('ps_tenant_key_4321_0123456789abcdef')?.name, 'tenant-4321');
    assert.equal(keys.verify(KEY_A)?.name, 'env-1');
    assert.equal(compare.mock.callCount(), 2, 'one comparison for each key found');
    // A key in API_KEYS that the file lists as inactive is refused, as before.
    assert.equal(keys.verify(KEY_B), undefined);
  } finally {
    compare.mock.restore();
    syncBuiltinESMExports();
    keys.close();
  }
});

test('changes to the key file are picked up without a restart (revoke, add)', async () => {
  const file = join(dir, 'reload.json');
  writeKeys(file, [record('acme', KEY_A)]);
  const keys = ring(file);
  keys.start();
  try {
    assert.ok(keys.verify(KEY_A));
    writeKeys(file, [record('acme', KEY_A, { active: false }), record('beta', KEY_B)]);
    await until(() => keys.verify(KEY_A) === undefined && keys.verify(KEY_B) !== undefined, 'the new file to be read');
  } finally {
    keys.close();
  }
});

test("an edit in place that keeps the file's size and modification time (cp -p, a restored backup) is still picked up", async () => {
  const file = join(dir, 'same-size.json');
  writeKeys(file, [record('acme', KEY_A)]);
  // A whole second, which the file system keeps exactly.
  const stamp = 1_700_000_000;
  utimesSync(file, stamp, stamp);
  const keys = ring(file);
  keys.start();
  try {
    const before = statSync(file);
    // Another key of the same length: the file keeps its size, and is written over in place (same inode).
    writeFileSync(file, readFileSync(file, 'utf8').replace(hashKey(KEY_A), hashKey(KEY_B)));
    utimesSync(file, stamp, stamp);
    assert.equal(statSync(file).mtimeMs, before.mtimeMs);
    assert.equal(statSync(file).size, before.size);
    assert.equal(statSync(file).ino, before.ino);
    await until(() => keys.verify(KEY_B) !== undefined, 'the edited file to be read');
    assert.equal(keys.verify(KEY_A), undefined, 'the key it replaced is refused');
  } finally {
    keys.close();
  }
});

test('a broken or missing key file keeps the keys loaded before in force, and the ring says it is stale', async () => {
  const file = join(dir, 'broken.json');
  writeKeys(file, [record('acme', KEY_A)]);
  // The ring says when it has looked at the file: wait for that, not for a while.
  const said: string[] = [];
  const logger = createLogger('error', { write: (line: string) => said.push(String(JSON.parse(line).msg)) });
  const keys = ring(file, [], logger);
  keys.start();
  try {
    assert.equal(keys.fileStatus, 'ok');
    writeFileSync(file, '{"version": 1, "keys": [');
    await until(() => keys.fileStatus === 'stale', 'the broken file to be seen');
    assert.equal(keys.reloadFailures, 1);
    assert.ok(keys.verify(KEY_A));
    rmSync(file);
    await until(() => keys.reloadFailures === 2, 'the missing file to be seen');
    assert.ok(keys.verify(KEY_A));
    assert.equal(keys.fileStatus, 'stale');
    writeKeys(file, [record('acme', KEY_A)]);
    await until(() => keys.fileStatus === 'ok', 'the good file to be read');
  } finally {
    keys.close();
  }
});

test('a revocation in a file that is otherwise invalid is applied anyway; the file stays stale until it is fixed', async () => {
  const file = join(dir, 'revoke-broken.json');
  writeKeys(file, [record('acme', KEY_A), record('beta', KEY_B)]);
  const keys = ring(file);
  keys.start();
  try {
    // acme revoked, beta kept, and a mistake elsewhere (a rate of 0) makes the file invalid.
    writeFileSync(
      file,
      JSON.stringify({
        version: 1,
        keys: [record('acme', KEY_A, { active: false }), record('beta', KEY_B, { rateLimit: 0 })],
      }),
    );
    await until(() => keys.fileStatus === 'stale', 'the invalid file to be seen');
    assert.equal(keys.verify(KEY_A), undefined, 'the revoked key is refused at once');
    assert.ok(keys.verify(KEY_B), 'the key still listed as active keeps working');
  } finally {
    keys.close();
  }
});

test('a key file of an unknown version is refused', () => {
  assert.throws(() => parseKeyFile(JSON.stringify({ version: 2, keys: [] })), /version: 2/);
  assert.throws(() => parseKeyFile(JSON.stringify({ keys: [] })), /version: missing/);
});

test('a key file may not use the names of API_KEYS entries (env-1, env-2, …)', () => {
  assert.throws(
    () => parseKeyFile(JSON.stringify({ version: 1, keys: [record('env-1', KEY_A)] })),
    /reserved for keys from API_KEYS/,
  );
});

test('a key file that is missing or invalid at start stops the start', () => {
  assert.throws(() => ring(join(dir, 'absent.json')).start(), /ENOENT/);
  const file = join(dir, 'invalid.json');
  writeFileSync(file, '{"keys": [{"name": "x"}]}');
  assert.throws(() => ring(file).start(), KeyFileError);
});

test('npm run key: create prints a key once and stores only its hash; list and revoke; the ring follows', async () => {
  const file = join(dir, 'tool.json');
  const tool = (...args: string[]): Promise<{ stdout: string; stderr: string }> =>
    run(process.execPath, ['--import', 'tsx', 'scripts/key.ts', ...args, '--file', file], {
      env: { ...process.env, API_KEYS_FILE: '' },
    });

  const created = await tool('create', '--name', 'acme', '--rate', '30/min', '--concurrency', '2');
  const key = /\n {2}(ps_[\w-]{43})\n/.exec(created.stdout)?.[1];
  assert.ok(key, created.stdout);
  const stored = readFileSync(file, 'utf8');
  assert.ok(!stored.includes(key), 'the key itself is not stored');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.deepEqual(
    parseKeyFile(stored).keys.map(({ createdAt: _c, ...k }) => k),
    [{ name: 'acme', sha256: hashKey(key), active: true, rateLimit: 30, rateLimitWindowMs: 60_000, maxConcurrency: 2 }],
  );

  const keys = ring(file);
  keys.start();
  try {
    assert.equal(keys.verify(key)?.name, 'acme');
    assert.match((await tool('list')).stdout, /^acme\tactive\trate 30\/min\tconcurrency 2\t/);
    await tool('revoke', '--name', 'acme');
    assert.match((await tool('list')).stdout, /^acme\trevoked/);
    await until(() => keys.verify(key) === undefined, 'the revocation to be read');
    await assert.rejects(
      tool('create', '--name', 'acme'),
      (e: { stderr: string; code: number }) => e.code === 2 && /exists/.test(e.stderr),
    );
    await assert.rejects(tool('create', '--name', 'x', '--rate', 'lots'), (e: { stderr: string }) =>
      /--rate "lots"/.test(e.stderr),
    );
    await tool('activate', '--name', 'acme');
    await until(() => keys.verify(key) !== undefined, 'the activation to be read');
  } finally {
    keys.close();
  }
});
