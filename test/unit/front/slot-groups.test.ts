// Finding the front's CPU cgroup (src/front/cgroups/slot-groups.ts) from
// /proc/self/cgroup and /proc/self/mountinfo, as machines and containers have them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findCpuCgroup, findV1Cgroup } from '../../../src/front/cgroups/slot-groups.js';

const V1_MOUNTS = [
  '25 24 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755',
  '27 25 0:24 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
  '30 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct',
  '31 25 0:28 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
].join('\n');

test('cgroup v1 (hybrid): the cpu hierarchy, not the unified tree without controllers', () => {
  const cgroup =
    '4:memory:/system.slice/x.service\n3:cpu,cpuacct:/system.slice/x.service\n0::/system.slice/x.service\n';
  assert.deepEqual(findCpuCgroup(cgroup, V1_MOUNTS), {
    version: 1,
    dir: '/sys/fs/cgroup/cpu,cpuacct/system.slice/x.service',
  });
});

test('cgroup v1 at the root of its hierarchy', () => {
  assert.deepEqual(findCpuCgroup('1:cpu,cpuacct:/\n', V1_MOUNTS), { version: 1, dir: '/sys/fs/cgroup/cpu,cpuacct' });
});

test('cgroup v2 only', () => {
  const mounts = '26 25 0:23 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate';
  assert.deepEqual(findCpuCgroup('0::/user.slice/pagescript.service\n', mounts), {
    version: 2,
    dir: '/sys/fs/cgroup/user.slice/pagescript.service',
  });
});

test('a container whose mount shows only its own subtree: the path is read from the mount’s root', () => {
  const mounts = '40 35 0:23 /machine.slice/libpod-abc.scope /sys/fs/cgroup ro - cgroup2 cgroup2 rw';
  assert.deepEqual(findCpuCgroup('0::/machine.slice/libpod-abc.scope/container\n', mounts), {
    version: 2,
    dir: '/sys/fs/cgroup/container',
  });
  // A cgroup outside what is mounted cannot be reached.
  assert.equal(findCpuCgroup('0::/elsewhere\n', mounts), undefined);
});

test('no cgroup file system mounted, or an empty /proc: none', () => {
  assert.equal(findCpuCgroup('0::/\n', '22 1 0:5 / /proc rw - proc proc rw'), undefined);
  assert.equal(findCpuCgroup('', ''), undefined);
});

test('escaped characters of mountinfo paths are read back', () => {
  const mounts = '30 25 0:27 / /sys/fs/cgroup/my\\040cpu rw - cgroup cgroup rw,cpu';
  assert.deepEqual(findCpuCgroup('3:cpu:/a\n', mounts), { version: 1, dir: '/sys/fs/cgroup/my cpu/a' });
});

test('cgroup v1 with cpuacct mounted apart from cpu: each hierarchy found by its own controller', () => {
  const mounts = [
    '32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
    '33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct',
  ].join('\n');
  const cgroup = '2:cpuacct:/a\n1:cpu:/b\n0::/\n';
  assert.deepEqual(findCpuCgroup(cgroup, mounts), { version: 1, dir: '/sys/fs/cgroup/cpu/b' });
  assert.equal(findV1Cgroup('cpuacct', cgroup, mounts), '/sys/fs/cgroup/cpuacct/a');
  // Mounted together, both are the same directory.
  assert.equal(findV1Cgroup('cpuacct', '3:cpu,cpuacct:/c\n', V1_MOUNTS), '/sys/fs/cgroup/cpu,cpuacct/c');
  assert.equal(findV1Cgroup('cpuacct', '0::/\n', mounts), undefined);
});
