// The pieces of a slot's privacy that need no running service
// (src/front/host/slot-privacy.ts, src/slot/drop-user.ts, src/slot/tmp-empty.ts).
import assert from 'node:assert/strict';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { loadConfig } from '../../../src/common/config.js';
import { execOnlyCopy, prepareSlotPrivacy, privateTmpScript, slotTmpMb } from '../../../src/front/host/slot-privacy.js';
import { capturingLogger } from '../../helpers/service.js';
import { runAsArgument } from '../../../src/slot/drop-user.js';
import { emptyTmp } from '../../../src/slot/tmp-empty.js';

const made: string[] = [];
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});
const scratch = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'pagescript-privacy-'));
  made.push(d);
  return d;
};

describe("a slot's tmpfs", () => {
  test('is bounded above the page memory (Chromium’s shared memory is there) and replaces every shared writable place', () => {
    assert.ok(slotTmpMb(512) > 512);
    const script = privateTmpScript({ unshare: '/usr/bin/unshare', mount: '/usr/bin/mount', sizeMb: 576 });
    assert.match(script, /-t tmpfs -o size=576m,nr_inodes=\d+,mode=1777,nosuid,nodev pagescript-slot \/tmp/);
    for (const place of ['/var/tmp', '/dev/shm', '/run/lock']) assert.ok(script.includes(place), place);
    assert.match(script, /exec "\$@"$/);
  });

  test('emptying it leaves only the live Chromium profile, a tree made read-only included', async () => {
    const dir = scratch();
    const profile = join(dir, 'pagescript-chromium-live');
    mkdirSync(profile);
    writeFileSync(join(profile, 'Preferences'), '{}');
    mkdirSync(join(dir, 'pagescript-chromium-forged'));
    writeFileSync(join(dir, 'left'), 'x');
    mkdirSync(join(dir, 'locked', 'deep'), { recursive: true });
    writeFileSync(join(dir, 'locked', 'deep', 'f'), 'x');
    chmodSync(join(dir, 'locked', 'deep'), 0o500);
    chmodSync(join(dir, 'locked'), 0o500);
    await emptyTmp(dir, { dirs: new Set([profile]), making: 0 });
    assert.deepEqual(readdirSync(dir), ['pagescript-chromium-live']);
    assert.deepEqual(readdirSync(profile), ['Preferences']);
  });

  test('while a Chromium is being started, every profile directory is kept (its own is not known yet)', async () => {
    const dir = scratch();
    mkdirSync(join(dir, 'pagescript-chromium-new'));
    writeFileSync(join(dir, 'left'), 'x');
    await emptyTmp(dir, { dirs: new Set(), making: 1 });
    assert.deepEqual(readdirSync(dir), ['pagescript-chromium-new']);
  });
});

describe('a slot process’s user', () => {
  test('is read from --run-as=<uid>:<gid> only', () => {
    assert.deepEqual(runAsArgument(['node', 'main.js', '--run-as=59000:994']), { uid: 59000, gid: 994 });
    assert.equal(runAsArgument(['node', 'main.js']), undefined);
    assert.equal(runAsArgument(['node', 'main.js', '--run-as=root:0']), undefined);
  });
});

describe("Chromium's execute-only copy", () => {
  test('is refused without a SUID sandbox helper next to Chromium', (t) => {
    if (process.getuid?.() !== 0) return t.skip('not root');
    const src = scratch();
    writeFileSync(join(src, 'chromium-headless-shell'), 'binary', { mode: 0o755 });
    assert.throws(
      () => execOnlyCopy(join(src, 'chromium-headless-shell'), join(scratch(), 'exec-only')),
      /SUID sandbox helper/,
    );
  });

  test('is made once, mode 0711 and root’s, with the rest of Chromium’s directory linked, and taken again', (t) => {
    if (process.getuid?.() !== 0) return t.skip('not root');
    const src = scratch();
    chmodSync(src, 0o755);
    writeFileSync(join(src, 'chromium-headless-shell'), 'binary', { mode: 0o755 });
    writeFileSync(join(src, 'resources.pak'), 'pak');
    copyFileSync('/bin/true', join(src, 'chrome-sandbox'));
    chmodSync(join(src, 'chrome-sandbox'), 0o4755);
    const root = join(scratch(), 'exec-only');
    const copy = execOnlyCopy(join(src, 'chromium-headless-shell'), root);
    for (const f of [copy.chromium, copy.shell]) {
      const st = statSync(f);
      assert.equal(st.mode & 0o7777, 0o711, f);
      assert.equal(st.uid, 0);
    }
    const dir = join(copy.chromium, '..');
    assert.equal(readlinkSync(join(dir, 'resources.pak')), join(src, 'resources.pak'));
    assert.equal(readlinkSync(join(dir, 'chrome-sandbox')), join(src, 'chrome-sandbox'));
    const again = execOnlyCopy(join(src, 'chromium-headless-shell'), root);
    assert.deepEqual(again, copy);
    assert.deepEqual(readdirSync(root).length, 1, 'one copy, no leftovers');
    assert.ok(existsSync(copy.chromium));
  });

  test("an image's shipped copy (root/image, as the Dockerfile makes it) is taken as it is, and only if execute-only", (t) => {
    if (process.getuid?.() !== 0) return t.skip('not root');
    const src = scratch();
    chmodSync(src, 0o755);
    writeFileSync(join(src, 'chromium-headless-shell'), 'binary', { mode: 0o755 });
    copyFileSync('/bin/true', join(src, 'chrome-sandbox'));
    chmodSync(join(src, 'chrome-sandbox'), 0o4755);
    const root = join(scratch(), 'exec-only');
    mkdirSync(join(root, 'image'), { recursive: true, mode: 0o711 });
    writeFileSync(join(root, 'image', 'chromium-headless-shell'), 'binary', { mode: 0o755 });
    copyFileSync('/bin/true', join(root, 'image', 'sh'));
    chmodSync(join(root, 'image', 'sh'), 0o711);
    // Control: readable, it is not taken: a copy is made instead.
    assert.notEqual(
      execOnlyCopy(join(src, 'chromium-headless-shell'), root).chromium,
      join(root, 'image', 'chromium-headless-shell'),
    );
    chmodSync(join(root, 'image', 'chromium-headless-shell'), 0o711);
    assert.deepEqual(execOnlyCopy(join(src, 'chromium-headless-shell'), root), {
      chromium: join(root, 'image', 'chromium-headless-shell'),
      shell: join(root, 'image', 'sh'),
    });
  });
});

describe('SLOT_NON_DUMPABLE', () => {
  // Root of a user namespace without SYS_ADMIN: nothing is copied or mounted, whatever the setting.
  const privileges = { root: true, hostRoot: false, effective: '0', bounding: '0', noNewPrivs: false };
  const prepare = (nonDumpable?: boolean) =>
    prepareSlotPrivacy(
      {
        executablePath: '/usr/lib/chromium/chromium-headless-shell',
        pageMemoryMb: 512,
        asRoot: true,
        privileges,
        ...(nonDumpable === undefined ? {} : { nonDumpable }),
      },
      capturingLogger().logger,
    );

  test('is on unless set off, and only on or off', () => {
    assert.equal(loadConfig({}).slotNonDumpable, true);
    assert.equal(loadConfig({ SLOT_NON_DUMPABLE: 'off' }).slotNonDumpable, false);
    assert.equal(loadConfig({ SLOT_NON_DUMPABLE: ' ON ' }).slotNonDumpable, true);
    assert.throws(() => loadConfig({ SLOT_NON_DUMPABLE: 'maybe' }), /SLOT_NON_DUMPABLE: "maybe" must be on or off/);
  });

  test('off: Chromium keeps its readable binary, the slot process still drops in-process, and /health says why', () => {
    const off = prepare(false);
    assert.equal(off.nonDumpable, 'off: SLOT_NON_DUMPABLE=off');
    assert.equal(off.execOnly, undefined);
    assert.equal(off.dropInProcess, true);
    // Control: without the setting, what is said is what the privileges allow, not the setting.
    assert.match(prepare().nonDumpable, /^off: Chromium stays readable: its SUID sandbox helper cannot run here/);
    assert.match(prepare(true).nonDumpable, /^off: Chromium stays readable/);
  });
});
