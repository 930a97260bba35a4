// Which root the front is (src/front/host/privileges.ts), and the drop of the
// machine's root to the image's user (src/front/host/host-root-drop.ts): read from
// the texts /proc gives in each case, as seen on this machine and in podman
// containers with and without a user namespace.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { hostRootDropTarget } from '../../../src/front/host/host-root-drop.js';
import { hasCap, isHostUserNamespace, lacking, privileges } from '../../../src/front/host/privileges.js';
import { whyNoUsers } from '../../../src/front/host/users.js';

/** /proc/self/uid_map as the machine's root, and as root of a container's user namespace (podman --uidmap). */
const HOST_MAP = '         0          0 4294967295\n';
const CONTAINER_MAP = '         0    1000000      65536\n';
/** CapEff of root with every capability, and of podman's root with SETUID, SETGID, KILL, CHOWN, DAC_OVERRIDE, FOWNER. */
const ALL = '000001ffffffffff';
const BASELINE = '00000000000000eb';

const status = (eff: string, bnd = eff, nnp = 0): string =>
  `Name:\tnode\nUid:\t0\t0\t0\t0\nCapInh:\t0000000000000000\nCapPrm:\t${eff}\nCapEff:\t${eff}\nCapBnd:\t${bnd}\nNoNewPrivs:\t${nnp}\n`;

const dir = mkdtempSync(join(tmpdir(), 'pagescript-privileges-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const passwd = join(dir, 'passwd');
writeFileSync(
  passwd,
  'root:x:0:0::/root:/bin/sh\npagescript:x:10001:10001::/home/pagescript:/bin/sh\nzero:x:0:5::/:/bin/sh\n',
);

describe('which root the front is', () => {
  test("the host's user namespace is the one map of every uid to itself; a container's is any other", () => {
    assert.equal(isHostUserNamespace(HOST_MAP), true);
    assert.equal(isHostUserNamespace(CONTAINER_MAP), false);
    // A namespace that maps the whole range, but in two pieces, or shifted, is still made below the host's.
    assert.equal(isHostUserNamespace('0 0 1000\n1000 1000 4294966295\n'), false);
    assert.equal(isHostUserNamespace('0 1 4294967295\n'), false);
  });

  test('capabilities are read from the masks of /proc/self/status, and what is missing is named', () => {
    const p = privileges({ uid: 0, uidMap: CONTAINER_MAP, status: status(BASELINE, '00000000002410eb', 1) });
    assert.deepEqual(p, {
      root: true,
      hostRoot: false,
      effective: BASELINE,
      bounding: '00000000002410eb',
      noNewPrivs: true,
    });
    for (const c of ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETUID'] as const)
      assert.equal(hasCap(BASELINE, c), true, c);
    assert.deepEqual(lacking(p, ['SETUID', 'NET_ADMIN', 'SYS_ADMIN']), ['NET_ADMIN', 'SYS_ADMIN']);
    assert.deepEqual(lacking(p, ['NET_ADMIN', 'SYS_ADMIN', 'SYS_CHROOT'], 'bounding'), []);
    assert.equal(privileges({ uid: 0, uidMap: HOST_MAP, status: status(ALL) }).hostRoot, true);
    assert.equal(privileges({ uid: 10001, uidMap: HOST_MAP, status: status('0') }).hostRoot, false);
  });

  test('slots get users of their own only from a root that may switch users', () => {
    assert.equal(whyNoUsers({ root: false, effective: '0' }), 'not root');
    assert.equal(whyNoUsers({ root: true, effective: BASELINE }), undefined);
    assert.equal(whyNoUsers({ root: true, effective: '0000000000000020' }), 'no SETUID, SETGID');
  });
});

describe("the machine's root in the image", () => {
  test("started as the machine's root with DROP_HOST_ROOT_TO set (Docker's default), the front drops to that user", () => {
    assert.deepEqual(hostRootDropTarget({ DROP_HOST_ROOT_TO: 'pagescript' }, { hostRoot: true }, passwd), {
      user: 'pagescript',
      uid: 10001,
      gid: 10001,
    });
  });

  test('root of a user namespace of its own, or a host run without DROP_HOST_ROOT_TO, stays root', () => {
    assert.equal(hostRootDropTarget({ DROP_HOST_ROOT_TO: 'pagescript' }, { hostRoot: false }, passwd), undefined);
    assert.equal(hostRootDropTarget({}, { hostRoot: true }, passwd), undefined);
  });

  test('a DROP_HOST_ROOT_TO that is missing or root is refused, never taken as root', () => {
    assert.throws(
      () => hostRootDropTarget({ DROP_HOST_ROOT_TO: 'nobody-here' }, { hostRoot: true }, passwd),
      /not an unprivileged user/,
    );
    assert.throws(
      () => hostRootDropTarget({ DROP_HOST_ROOT_TO: 'zero' }, { hostRoot: true }, passwd),
      /not an unprivileged user/,
    );
  });
});
