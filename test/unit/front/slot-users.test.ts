// As root, each request slot runs as a user of its own (src/front/host/users.ts),
// created by scripts/bootstrap.mjs: the service refuses to start when a slot has
// no user, naming how many slots were asked and how many users exist.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DEFAULT_SLOT_USERS, SLOT_UID_BASE, slotUsers } from '../../../src/front/host/users.js';

const ROOT = process.getuid?.() === 0;

function passwd(lines: string[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'slot-users-')), 'passwd');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

const slot = (i: number, uid = SLOT_UID_BASE + i): string =>
  `pagescript-slot-${i}:x:${uid}:${uid}::/nonexistent:/usr/sbin/nologin`;

test("scripts/bootstrap.mjs creates the slot users with users.ts's numbers", () => {
  const bootstrap = readFileSync(new URL('../../../scripts/bootstrap.mjs', import.meta.url), 'utf8');
  assert.match(bootstrap, new RegExp(`const SLOT_UID_BASE = ${SLOT_UID_BASE};`));
  assert.match(bootstrap, new RegExp(`const SLOT_USERS = ${DEFAULT_SLOT_USERS};`));
});

test(
  'as root, slot i runs as pagescript-slot-i; the list is the one place their uids come from',
  { skip: !ROOT && 'not root: slots keep the service’s user' },
  () => {
    const users = slotUsers(
      { slotUserPrefix: 'pagescript-slot-', maxConcurrency: 3 },
      passwd([0, 1, 2, 3].map((i) => slot(i))),
    );
    assert.deepEqual(
      users?.map((u) => [u.user, u.uid]),
      [
        ['pagescript-slot-0', SLOT_UID_BASE],
        ['pagescript-slot-1', SLOT_UID_BASE + 1],
        ['pagescript-slot-2', SLOT_UID_BASE + 2],
      ],
    );
  },
);

test(
  'as root, MAX_CONCURRENCY beyond the slot users refuses to start, naming both numbers',
  { skip: !ROOT && 'not root' },
  () => {
    const file = passwd([0, 1].map((i) => slot(i)));
    assert.throws(
      () => slotUsers({ slotUserPrefix: 'pagescript-slot-', maxConcurrency: 5 }, file),
      /MAX_CONCURRENCY=5 request slots needs an unprivileged user of its own, but only 2 exist \(pagescript-slot-0\.\.pagescript-slot-1; "pagescript-slot-2" is missing\): run `SLOT_USERS=5 node scripts\/bootstrap\.mjs build`/,
    );
  },
);

test(
  'as root, a slot user that is root, or shares its uid with another slot, is refused',
  { skip: !ROOT && 'not root' },
  () => {
    assert.throws(
      () => slotUsers({ slotUserPrefix: 'pagescript-slot-', maxConcurrency: 1 }, passwd([slot(0, 0)])),
      /must be unprivileged/,
    );
    assert.throws(
      () =>
        slotUsers({ slotUserPrefix: 'pagescript-slot-', maxConcurrency: 2 }, passwd([slot(0, 59000), slot(1, 59000)])),
      /of no other slot/,
    );
  },
);

test('not root: no slot users (every child keeps the service’s user)', { skip: ROOT && 'root' }, () => {
  assert.equal(slotUsers({ slotUserPrefix: 'pagescript-slot-', maxConcurrency: 2 }), undefined);
});
