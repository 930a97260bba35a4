// The nft script of the kernel lock (src/front/host/kernel-lock.ts): what it
// lets a slot's user reach, and that nothing else of the machine is named in it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig, DEFAULT_EGRESS_PORTS } from '../../../src/common/config.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockScript, runNft } from '../../../src/front/host/kernel-lock.js';
import { NftReader } from '../../../src/front/host/nft-reader.js';
import { silentLogger } from '../../../src/common/log.js';

const TABLE = 'pagescript_1234_5678_1';

test('the lock script replaces its own table, lets the slots reach only the guard ports on 127.0.0.1, and counts each slot user’s refusals apart', () => {
  assert.equal(
    lockScript(TABLE, [59001, 59000, 59001], { first: 28000, last: 28999 }),
    [
      'table inet pagescript_1234_5678_1',
      'delete table inet pagescript_1234_5678_1',
      'table inet pagescript_1234_5678_1 {',
      '  counter slot_59000 {}',
      '  counter slot_59001 {}',
      '  map slot_drops { type uid : counter; elements = { 59000 : "slot_59000", 59001 : "slot_59001" } }',
      '  chain output {',
      '    type filter hook output priority filter; policy accept;',
      '    meta skuid { 59000, 59001 } ip daddr 127.0.0.1 tcp dport 28000-28999 accept',
      '    meta skuid { 59000, 59001 } meta l4proto tcp counter counter name meta skuid map @slot_drops reject with tcp reset',
      '    meta skuid { 59000, 59001 } counter counter name meta skuid map @slot_drops reject with icmpx type admin-prohibited',
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

/** A stand-in for `nft -j -i`: answers each line with a counter of `packets` read from a file, or fails as told. */
function fakeInteractiveNft(dir: string): { nft: string; set(text: string): void; starts(): number } {
  const nft = join(dir, 'nft');
  const answer = join(dir, 'answer');
  const starts = join(dir, 'starts');
  writeFileSync(starts, '');
  writeFileSync(
    nft,
    `#!/bin/sh\necho x >> ${starts}\nwhile read -r line; do a=$(cat ${answer}); case "$a" in err*) echo "Error: $a" >&2;; hang) sleep 60;; *) echo "{\\"nftables\\": [{\\"counter\\": {\\"name\\": \\"slot_59000\\", \\"packets\\": $a}}]}";; esac; done\n`,
    { mode: 0o755 },
  );
  return {
    nft,
    set: (text) => writeFileSync(answer, text),
    starts: () => readFileSync(starts, 'utf8').split('\n').filter(Boolean).length,
  };
}

test('the counter reader reads counters through one kept nft, and starts another after a failure', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pagescript-nft-'));
  const fake = fakeInteractiveNft(dir);
  const reader = new NftReader(fake.nft, silentLogger());
  try {
    fake.set('3');
    assert.equal(await reader.counterPackets(TABLE, 'slot_59000'), 3);
    fake.set('7');
    assert.equal(await reader.counterPackets(TABLE, 'slot_59000'), 7);
    assert.equal(fake.starts(), 1, 'one nft answered both');
    // A counter of another name in the answer is no answer.
    assert.equal(await reader.counterPackets(TABLE, 'slot_59001'), undefined);
    fake.set('error: no such counter');
    assert.equal(await reader.counterPackets(TABLE, 'slot_59000'), undefined);
    fake.set('9');
    assert.equal(await reader.counterPackets(TABLE, 'slot_59000'), 9);
    assert.equal(fake.starts(), 3, 'each failure ended its nft, and the next query started another');
    await reader.close();
    assert.equal(await reader.counterPackets(TABLE, 'slot_59000'), undefined);
  } finally {
    await reader.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
