// The allow-list is exact and this machine's own addresses are not "public":
// every answer of a name is judged on its own, and the address dialled is one
// that was judged. No traffic: an injected resolver and interface list.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EgressChecker, addressKey, ownAddressKey, type ResolvedAddress } from '../../../src/egress/checker.js';

const PORT = 8080;

function resolverOf(answers: Record<string, string[]>): (host: string) => Promise<ResolvedAddress[]> {
  return async (host) => {
    const a = answers[host];
    if (!a) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return a.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

/** Every order of a list. */
function permutations<T>(xs: readonly T[]): T[][] {
  if (xs.length <= 1) return [[...xs]];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));
}

function checkerFor(
  answers: string[],
  allowlist: { host: string; port: number }[],
  localAddresses: () => readonly string[] = () => [],
): EgressChecker {
  return new EgressChecker({
    allowlist,
    protectedPorts: () => [3000],
    resolve: resolverOf({ 'name.test': answers }),
    localAddresses,
  });
}

describe('an allow-listed address vouches for no other answer', () => {
  const refusedAnswers: Record<string, string[]> = {
    '::1 beside an allow-listed 127.0.0.1': ['127.0.0.1', '::1'],
    'the metadata address beside an allow-listed 127.0.0.1': ['127.0.0.1', '169.254.169.254'],
    '10.0.0.1 beside an allow-listed 127.0.0.1 and a public address': ['127.0.0.1', '10.0.0.1', '93.184.216.34'],
    '127.0.0.2 beside an allow-listed 127.0.0.1': ['127.0.0.1', '127.0.0.2'],
  };
  for (const [name, answers] of Object.entries(refusedAnswers)) {
    test(`${name} is refused in every order`, async () => {
      for (const order of permutations(answers)) {
        const d = await checkerFor(order, [{ host: '127.0.0.1', port: PORT }]).check('name.test', PORT);
        assert.equal(d.ok, false, order.join(', '));
        assert.match(d.ok ? '' : d.reason, /^address not allowed/);
      }
    });
  }

  test('answers that are each allowed pass in every order, and the address dialled is one of them', async () => {
    const answers = ['127.0.0.1', '93.184.216.34', '::ffff:127.0.0.1'];
    for (const order of permutations(answers)) {
      const d = await checkerFor(order, [{ host: '127.0.0.1', port: PORT }]).check('name.test', PORT);
      assert.ok(d.ok, order.join(', '));
      assert.equal(d.address, order[0]);
    }
  });

  test('an IPv4-mapped answer is the IPv4 address it carries, for the allow-list and for refusal', async () => {
    const listed = [{ host: '127.0.0.1', port: PORT }];
    assert.equal((await checkerFor(['::ffff:127.0.0.1'], listed).check('name.test', PORT)).ok, true);
    assert.equal((await checkerFor(['::ffff:7f00:1'], listed).check('name.test', PORT)).ok, true);
    assert.equal((await checkerFor(['::ffff:127.0.0.2'], listed).check('name.test', PORT)).ok, false);
    assert.equal((await checkerFor(['::ffff:169.254.169.254'], listed).check('name.test', PORT)).ok, false);
    // An allow-list entry in mapped form opens the IPv4 address, and nothing else.
    const mapped = [{ host: '::ffff:127.0.0.1', port: PORT }];
    assert.equal((await checkerFor(['127.0.0.1'], mapped).check('name.test', PORT)).ok, true);
    assert.equal((await checkerFor(['127.0.0.1', '::1'], mapped).check('name.test', PORT)).ok, false);
  });

  test('an allow-listed host on another port is refused', async () => {
    const c = checkerFor(['10.1.2.3'], [{ host: 'name.test', port: PORT }]);
    assert.equal((await c.check('name.test', PORT)).ok, true);
    assert.equal((await c.check('name.test', PORT + 1)).ok, false);
    assert.equal((await c.check('name.test', 80)).ok, false);
    const byAddress = checkerFor(['10.1.2.3'], [{ host: '10.1.2.3', port: PORT }]);
    assert.equal((await byAddress.check('10.1.2.3', PORT)).ok, true);
    assert.equal((await byAddress.check('10.1.2.3', 443)).ok, false);
  });

  test('addresses are compared as numbers, not as text', () => {
    assert.equal(addressKey('::ffff:127.0.0.1'), addressKey('127.0.0.1'));
    assert.equal(addressKey('[::FFFF:7F00:1]'), addressKey('127.0.0.1'));
    assert.equal(addressKey('2001:DB8:0::1'), addressKey('2001:db8::1'));
    assert.notEqual(addressKey('::1'), addressKey('127.0.0.1'));
  });
});

describe("this machine's own addresses", () => {
  // 192.0.2.x and 2001:db8:: are documentation ranges, refused anyway; these public
  // addresses stand for an interface's address (they are never connected to).
  const interfaces = ['127.0.0.1', '::1', '203.0.114.7', '2606:4700:10::6816:1', 'fe80::1'];

  test("an interface's public address is refused, by literal and by a name that resolves to it", async () => {
    const c = new EgressChecker({
      allowlist: [],
      protectedPorts: () => [3000],
      resolve: resolverOf({ 'me.test': ['203.0.114.7'], 'me6.test': ['2606:4700:10::6816:1'] }),
      localAddresses: () => interfaces,
    });
    for (const [host, port] of [
      ['203.0.114.7', 3000],
      ['203.0.114.7', 22],
      ['[2606:4700:10::6816:1]', 443],
      ['[::ffff:203.0.114.7]', 80],
      ['me.test', 80],
      ['me6.test', 443],
    ] as const) {
      const d = await c.check(host, port);
      assert.equal(d.ok, false, `${host}:${port}`);
      assert.match(d.ok ? '' : d.reason, /this machine|this service/);
    }
  });

  test('an interface that comes up while running is refused from the next check', async () => {
    let now: string[] = ['127.0.0.1'];
    const c = new EgressChecker({
      allowlist: [],
      protectedPorts: () => [],
      resolve: resolverOf({}),
      localAddresses: () => now,
    });
    assert.equal((await c.check('203.0.114.9', 80)).ok, true, 'not ours yet: public');
    now = ['127.0.0.1', '203.0.114.9'];
    assert.equal((await c.check('203.0.114.9', 80)).ok, false);
    now = ['127.0.0.1'];
    assert.equal((await c.check('203.0.114.9', 80)).ok, true, 'gone again');
  });

  test("an allow-listed own address opens exactly that port, never the service's", async () => {
    const c = new EgressChecker({
      allowlist: [
        { host: '203.0.114.7', port: 8443 },
        { host: '203.0.114.7', port: 3000 },
      ],
      protectedPorts: () => [3000],
      resolve: resolverOf({}),
      localAddresses: () => interfaces,
    });
    assert.equal((await c.check('203.0.114.7', 8443)).ok, true);
    assert.equal((await c.check('203.0.114.7', 8444)).ok, false);
    const service = await c.check('203.0.114.7', 3000);
    assert.equal(service.ok, false);
    assert.match(service.ok ? '' : service.reason, /this service/);
  });
});

describe('the embedded-IPv4 forms of an own address', () => {
  // 203.0.114.7 stands for an interface's public IPv4 address (never connected to).
  const own = '203.0.114.7';
  const forms: Record<string, string> = {
    'IPv4-mapped': '::ffff:203.0.114.7',
    'IPv4-compatible': '::203.0.114.7',
    SIIT: '::ffff:0:203.0.114.7',
    NAT64: '64:ff9b::cb00:7207',
    'local NAT64': '64:ff9b:1::203.0.114.7',
    '6to4': '2002:cb00:7207::1',
  };
  const nameOf = (form: string): string => `${form.toLowerCase().replace(/\W/g, '-')}.test`;
  const checker = (): EgressChecker =>
    new EgressChecker({
      allowlist: [],
      protectedPorts: () => [3000],
      resolve: resolverOf(Object.fromEntries(Object.entries(forms).map(([k, v]) => [nameOf(k), [v]]))),
      localAddresses: () => ['127.0.0.1', own],
    });

  for (const [name, form] of Object.entries(forms)) {
    test(`the ${name} form of an own address (${form}) is refused, as a literal and as a name's answer`, async () => {
      const c = checker();
      for (const host of [`[${form}]`, nameOf(name)]) {
        const d = await c.check(host, 80);
        assert.equal(d.ok, false, host);
        assert.match(d.ok ? '' : d.reason, /is an address of this machine/, host);
      }
    });
  }

  test('an own IPv4 address listed on an interface in an embedded form is refused as IPv4 too', async () => {
    const c = new EgressChecker({
      allowlist: [],
      protectedPorts: () => [],
      resolve: resolverOf({}),
      localAddresses: () => ['64:ff9b::cb00:7207'],
    });
    assert.equal((await c.check(own, 80)).ok, false);
  });

  test('the allow-list matches only the address as dialled: an embedded form of an allow-listed 127.0.0.1 is refused', async () => {
    const c = new EgressChecker({
      allowlist: [{ host: '127.0.0.1', port: 8080 }],
      protectedPorts: () => [],
      resolve: resolverOf({}),
      localAddresses: () => ['127.0.0.1'],
    });
    assert.equal((await c.check('127.0.0.1', 8080)).ok, true);
    for (const form of ['64:ff9b::7f00:1', '::127.0.0.1', '::ffff:0:127.0.0.1', '2002:7f00:1::1']) {
      const d = await c.check(`[${form}]`, 8080);
      assert.equal(d.ok, false, form);
    }
  });

  test('::1 and :: stay IPv6 addresses, not IPv4-compatible forms of 0.0.0.x', () => {
    assert.equal(ownAddressKey('::1'), addressKey('::1'));
    assert.equal(ownAddressKey('::'), addressKey('::'));
    assert.equal(ownAddressKey('64:ff9b::cb00:7207'), addressKey(own));
  });
});
