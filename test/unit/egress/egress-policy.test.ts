// The address policy and the checker, tested without any traffic: every range,
// every spelling, and names whose (injected) resolver answers include them.
import assert from 'node:assert/strict';
import { BlockList } from 'node:net';
import { describe, test } from 'node:test';
import { EgressChecker, normalizeHost, type ResolvedAddress, type Resolver } from '../../../src/egress/checker.js';
import { isLocalName, judgeAddress } from '../../../src/egress/policy.js';

const refused = (ip: string): void => assert.equal(judgeAddress(ip).ok, false, `${ip} must be refused`);
const allowed = (ip: string): void => assert.equal(judgeAddress(ip).ok, true, `${ip} must be allowed`);

describe('IPv4 ranges that are not public', () => {
  // [first, last, just below, just above] of each range; the neighbours are public.
  const ranges: [string, string, string, string | undefined, string | undefined][] = [
    ['0/8', '0.0.0.0', '0.255.255.255', undefined, '1.0.0.0'],
    ['10/8', '10.0.0.0', '10.255.255.255', '9.255.255.255', '11.0.0.0'],
    ['100.64/10', '100.64.0.0', '100.127.255.255', '100.63.255.255', '100.128.0.0'],
    ['127/8', '127.0.0.0', '127.255.255.255', '126.255.255.255', '128.0.0.0'],
    ['169.254/16 (metadata)', '169.254.0.0', '169.254.255.255', '169.253.255.255', '169.255.0.0'],
    ['172.16/12', '172.16.0.0', '172.31.255.255', '172.15.255.255', '172.32.0.0'],
    ['192.0.0/24', '192.0.0.0', '192.0.0.255', '191.255.255.255', '192.0.1.0'],
    ['192.0.2/24', '192.0.2.0', '192.0.2.255', '192.0.1.255', '192.0.3.0'],
    ['192.168/16', '192.168.0.0', '192.168.255.255', '192.167.255.255', '192.169.0.0'],
    ['198.18/15', '198.18.0.0', '198.19.255.255', '198.17.255.255', '198.20.0.0'],
    ['198.51.100/24', '198.51.100.0', '198.51.100.255', '198.51.99.255', '198.51.101.0'],
    ['203.0.113/24', '203.0.113.0', '203.0.113.255', '203.0.112.255', '203.0.114.0'],
    ['224/4', '224.0.0.0', '239.255.255.255', '223.255.255.255', undefined],
    ['240/4', '240.0.0.0', '255.255.255.255', undefined, undefined],
  ];
  for (const [name, first, last, below, above] of ranges) {
    test(`${name} is refused from ${first} to ${last}, and its neighbours are not`, () => {
      refused(first);
      refused(last);
      if (below) allowed(below);
      if (above) allowed(above);
    });
  }

  test('169.254.169.254, the cloud metadata address, is refused', () => {
    const v = judgeAddress('169.254.169.254');
    assert.equal(v.ok, false);
    assert.match(v.ok ? '' : v.reason, /link-local/);
  });

  test('public addresses are allowed', () => {
    for (const ip of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '151.101.1.69']) allowed(ip);
  });
});

describe('IPv6', () => {
  test('::, ::1, fc00::/7, fe80::/10, ff00::/8 and 2001:db8::/32 are refused', () => {
    for (const ip of [
      '::',
      '::1',
      '0:0:0:0:0:0:0:1',
      'fc00::1',
      'fd00::1',
      'fdff:ffff::1',
      'fe80::1',
      'febf::1',
      'ff02::1',
      'ff0e::1',
      '2001:db8::1',
      '2001:db8:ffff::1',
    ]) {
      refused(ip);
    }
  });

  test('public IPv6 addresses are allowed', () => {
    for (const ip of ['2606:4700:4700::1111', '2a00:1450:4001::200e', '2001:4860:4860::8888']) allowed(ip);
  });

  test('forms that embed IPv4 are judged by their IPv4 address', () => {
    for (const ip of [
      '::ffff:127.0.0.1', // IPv4-mapped
      '::ffff:7f00:1',
      '::ffff:169.254.169.254',
      '::ffff:10.0.0.1',
      '::7f00:1', // IPv4-compatible (::/96)
      '::127.0.0.1',
      '64:ff9b::7f00:1', // NAT64
      '64:ff9b::a9fe:a9fe',
      '64:ff9b:1::a00:1', // local NAT64
      '2002:7f00:1::', // 6to4
      '2002:a9fe:a9fe::1',
      '2002:c0a8:101::',
      '::ffff:0:7f00:1', // SIIT
    ]) {
      refused(ip);
    }
    for (const ip of ['::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1']) allowed(ip);
  });

  test("node's BlockList alone misses embedded forms that the policy catches", () => {
    const bl = new BlockList();
    bl.addSubnet('127.0.0.0', 8, 'ipv4');
    bl.addSubnet('169.254.0.0', 16, 'ipv4');
    const missed = ['64:ff9b::7f00:1', '2002:7f00:1::', '::7f00:1', '64:ff9b::a9fe:a9fe'].filter(
      (ip) => !bl.check(ip, 'ipv6'),
    );
    assert.ok(missed.length > 0, 'BlockList would have let some through');
    for (const ip of missed) refused(ip);
  });

  test('zone ids and brackets do not change the verdict', () => {
    refused('fe80::1%eth0');
    refused('[::1]');
  });
});

describe('names', () => {
  test('localhost and *.localhost are this machine whatever DNS says', () => {
    for (const h of ['localhost', 'LOCALHOST', 'localhost.', 'foo.localhost', 'a.b.localhost.'])
      assert.ok(isLocalName(h), h);
    assert.ok(!isLocalName('localhost.example.com'));
  });

  test('numeric spellings of 127.0.0.1 are normalised before judging', () => {
    for (const h of ['127.1', '2130706433', '0x7f000001', '0177.0.0.1', '0x7f.1', '[::ffff:127.0.0.1]', 'LOCALHOST.']) {
      const n = normalizeHost(h);
      assert.ok(n === '127.0.0.1' || n === 'localhost' || n === '::ffff:7f00:1', `${h} → ${n}`);
    }
  });
});

/** A resolver with fixed answers, recording each lookup. No DNS is used. */
function fakeResolver(answers: Record<string, string[] | string[][]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const counters = new Map<string, number>();
  const fn = async (host: string): Promise<ResolvedAddress[]> => {
    calls.push(host);
    const a = answers[host];
    if (!a) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    // A list of lists answers differently on each call (DNS rebinding).
    const n = counters.get(host) ?? 0;
    counters.set(host, n + 1);
    const list = Array.isArray(a[0]) ? ((a as string[][])[n % a.length] as string[]) : (a as string[]);
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(fn, { calls });
}

describe('the checker', () => {
  const resolver = fakeResolver({
    'public.test': ['93.184.216.34'],
    'loopback.test': ['127.0.0.1'],
    'metadata.test': ['169.254.169.254'],
    'mixed.test': ['93.184.216.34', '10.0.0.1'],
    'v6mixed.test': ['2606:4700::1', 'fd00::1'],
    'intranet.test': ['10.1.2.3'],
  });
  const checker = new EgressChecker({
    allowlist: [
      { host: '127.0.0.1', port: 8080 },
      { host: 'intranet.test', port: 80 },
    ],
    protectedPorts: () => [3000, 4000],
    resolve: resolver,
  });

  test('a public name is allowed, with the address to connect to', async () => {
    assert.deepEqual(await checker.check('public.test', 443), {
      ok: true,
      address: '93.184.216.34',
      family: 4,
      allowlisted: false,
    });
  });

  test('a name that resolves to loopback or to the metadata address is refused', async () => {
    for (const h of ['loopback.test', 'metadata.test']) {
      const d = await checker.check(h, 80);
      assert.equal(d.ok, false, h);
      assert.match(d.ok ? '' : d.reason, /^address not allowed/);
    }
  });

  test('a name with one private answer among public ones is refused (v4 and v6)', async () => {
    assert.equal((await checker.check('mixed.test', 80)).ok, false);
    assert.equal((await checker.check('v6mixed.test', 80)).ok, false);
  });

  test('an unknown name is NAME_NOT_RESOLVED', async () => {
    const d = await checker.check('nowhere.test', 80);
    assert.deepEqual(d.ok ? null : d.code, 'NAME_NOT_RESOLVED');
  });

  test('the allow-list opens exactly host:port', async () => {
    assert.equal((await checker.check('127.0.0.1', 8080)).ok, true);
    assert.equal((await checker.check('127.0.0.1', 8081)).ok, false);
    assert.equal((await checker.check('intranet.test', 80)).ok, true);
    assert.equal((await checker.check('intranet.test', 81)).ok, false);
  });

  test('the service port and the guard port are refused even when allow-listed', async () => {
    const open = new EgressChecker({
      allowlist: [{ host: '127.0.0.1', port: 3000 }],
      protectedPorts: () => [3000],
      resolve: resolver,
    });
    const d = await open.check('127.0.0.1', 3000);
    assert.equal(d.ok, false);
    assert.match(d.ok ? '' : d.reason, /this service/);
  });

  test('loopback spellings and localhost names are refused without asking DNS', async () => {
    resolver.calls.length = 0;
    for (const h of [
      '127.0.0.1',
      '127.0.0.2',
      'localhost',
      'localhost.',
      'LOCALHOST',
      'foo.localhost',
      '[::1]',
      '::1',
      '0.0.0.0',
      '127.1',
      '2130706433',
      '0x7f000001',
      '0177.0.0.1',
      '[::ffff:127.0.0.1]',
      '[::7f00:1]',
      '[64:ff9b::7f00:1]',
      '[2002:7f00:1::]',
      '[fd00::1]',
      '[fe80::1]',
      '169.254.169.254',
    ]) {
      const d = await checker.check(h, 9999);
      assert.equal(d.ok, false, h);
    }
    assert.deepEqual(resolver.calls, []);
  });
});
