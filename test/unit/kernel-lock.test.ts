// The nft script of the kernel lock (src/front/children/kernel-lock.ts): what it
// lets a slot's user reach, and that nothing else of the machine is named in it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig, DEFAULT_EGRESS_PORTS } from '../../src/common/config.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockScript, runNft } from '../../src/front/children/kernel-lock.js';

const TABLE = 'pagescript_1234_5678_1';

test('the lock script replaces its own table and lets the slots reach only the guard ports on 127.0.0.1', () => {
  assert.equal(
    lockScript(TABLE, [59001, 59000, 59001], { first: 28000, last: 28999 }),
    [
      'table inet pagescript_1234_5678_1',
      'delete table inet pagescript_1234_5678_1',
      'table inet pagescript_1234_5678_1 {',
      '  chain output {',
      '    type filter hook output priority filter; policy accept;',
      '    meta skuid { 59000, 59001 } ip daddr 127.0.0.1 tcp dport 28000-28999 accept',
      '    meta skuid { 59000, 59001 } meta l4proto tcp counter reject with tcp reset',
      '    meta skuid { 59000, 59001 } counter reject with icmpx type admin-prohibited',
      '  }',
      '}',
      '',
    ].join('\n'),
  );
});

test('every rule of the lock script names the slot users: no other user of the machine is touched', () => {
  const rules = lockScript(TABLE, [59000], DEFAULT_EGRESS_PORTS)
    .split('\n')
    .filter((l) => /accept$|reject/.test(l) && !l.includes('policy'));
  assert.equal(rules.length, 3);
  for (const r of rules) assert.match(r, /^\s+meta skuid \{ 59000 \} /);
});

test('a table name that is not the service’s, root, or no uid at all is refused rather than written', () => {
  assert.throws(() => lockScript('filter', [59000], DEFAULT_EGRESS_PORTS), /not a kernel lock table name/);
  assert.throws(() => lockScript('pagescript_1_2_3; flush ruleset', [59000], DEFAULT_EGRESS_PORTS), /table name/);
  assert.throws(() => lockScript(TABLE, [], DEFAULT_EGRESS_PORTS), /uids/);
  assert.throws(() => lockScript(TABLE, [0], DEFAULT_EGRESS_PORTS), /uids/);
  assert.throws(() => lockScript(TABLE, [59000], { first: 29000, last: 28000 }), /port range/);
});

test('EGRESS_PORTS and EGRESS_KERNEL_LOCK are read and checked', () => {
  const base = { API_KEYS: 'k'.repeat(24), LOG_LEVEL: 'silent' };
  assert.deepEqual(loadConfig(base).egressPorts, { first: 28000, last: 28999 });
  assert.equal(loadConfig(base).egressKernelLock, true);
  assert.equal(loadConfig({ ...base, EGRESS_KERNEL_LOCK: 'off' }).egressKernelLock, false);
  assert.deepEqual(loadConfig({ ...base, EGRESS_PORTS: '20000-20063' }).egressPorts, { first: 20000, last: 20063 });
  assert.throws(() => loadConfig({ ...base, EGRESS_PORTS: '20000-20010' }), /EGRESS_PORTS: .*at least 64/);
  assert.throws(() => loadConfig({ ...base, EGRESS_PORTS: '80-2000' }), /EGRESS_PORTS/);
  assert.throws(
    () => loadConfig({ ...base, EGRESS_KERNEL_LOCK: 'maybe' }),
    /EGRESS_KERNEL_LOCK: "maybe" must be on or off/,
  );
});

test('an nft that exits before reading its input is reported by its exit, not thrown as EPIPE into whatever runs', async () => {
  // CI saw `write EPIPE` from the lock's nft call thrown into an unrelated test. 1 MiB of input is more than
  // a pipe holds, so the write is still going when this nft exits without reading it: EPIPE every time.
  const dir = mkdtempSync(join(tmpdir(), 'pagescript-nft-'));
  const fake = join(dir, 'nft');
  writeFileSync(fake, '#!/bin/sh\nexec 0<&-\necho "Error: refused by the fake" >&2\nexit 1\n', { mode: 0o755 });
  const uncaught: unknown[] = [];
  const onUncaught = (e: unknown): void => void uncaught.push(e);
  process.on('uncaughtException', onUncaught);
  try {
    await assert.rejects(runNft(fake, ['-f', '-'], 'x'.repeat(1 << 20)), /Error: refused by the fake/);
    await assert.rejects(runNft(fake, ['list', 'tables']), /Error: refused by the fake/);
    // runNft settles once the input's pipe is closed: its EPIPE, if any, has been emitted by now.
    assert.deepEqual(uncaught, []);
  } finally {
    process.off('uncaughtException', onUncaught);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an nft that cannot be started is reported at once, not waited on for its input pipe', async () => {
  await assert.rejects(runNft('/nonexistent/nft', ['list', 'tables']), /ENOENT/);
  await assert.rejects(runNft('/nonexistent/nft', ['-f', '-'], 'x'.repeat(1 << 20)), /ENOENT/);
});
