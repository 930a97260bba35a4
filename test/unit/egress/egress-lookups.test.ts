// Name lookups at the guard: a request's lookups in flight are bounded (the next
// wait their turn in that request), another request's go on meanwhile, and the
// guard's resolver (c-ares, DNS_SERVERS) ends a lookup its server never answers.
// A resolver injected, or a DNS server of the test's own on 127.0.0.1.
import assert from 'node:assert/strict';
import { connect, createServer, type Server } from 'node:net';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../../src/common/config.js';
import { silentLogger } from '../../../src/common/log.js';
import { EgressChecker, dnsResolver, type ResolvedAddress } from '../../../src/egress/checker.js';
import { EgressGuard } from '../../../src/egress/guard.js';
import type { EgressSession } from '../../../src/egress/session.js';
import { MAX_LOOKUPS_IN_FLIGHT_PER_REQUEST } from '../../../src/protocol/egress.js';
import { LoopbackDns } from '../../helpers/dns-server.js';

let target: Server;
let port = 0;
/** Lookups of silent names, each waiting until the test answers it. */
const silent: { host: string; fail: () => void }[] = [];
const silentArrived: (() => void)[] = [];
let guard: EgressGuard;

before(async () => {
  target = createServer((s) => s.end('hello'));
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  port = (target.address() as { port: number }).port;
  guard = new EgressGuard({
    checker: new EgressChecker({
      allowlist: [{ host: 'fast.test', port }],
      protectedPorts: () => [],
      localAddresses: () => [],
      resolve: async (host): Promise<ResolvedAddress[]> => {
        if (host === 'fast.test') return [{ address: '127.0.0.1', family: 4 }];
        return await new Promise((_resolve, reject) => {
          silent.push({ host, fail: () => reject(Object.assign(new Error('ETIMEOUT'), { code: 'ETIMEOUT' })) });
          silentArrived.shift()?.();
        });
      },
    }),
    logger: silentLogger(),
  });
  await guard.listen();
});
after(async () => {
  for (const s of silent) s.fail();
  await guard.close();
  await new Promise<void>((r) => target.close(() => r()));
});

/** A CONNECT through `session`; what came back when the guard closed or the tunnel answered. */
async function tunnel(session: EgressSession, host: string): Promise<string> {
  return await new Promise((resolve) => {
    const c = connect({ host: '127.0.0.1', port: session.port });
    let got = '';
    c.on('data', (d: Buffer) => {
      got += d.toString();
      if (got.endsWith('hello')) c.destroy();
    });
    c.on('error', () => undefined);
    c.on('close', () => resolve(got));
    c.write(`CONNECT ${host}:${port} HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`);
  });
}

async function silentAtLeast(n: number): Promise<void> {
  while (silent.length < n) await new Promise<void>((r) => silentArrived.push(r));
}

test("a request flooding names that never resolve holds only its own lookups: another request's go on", async () => {
  const flooder = await guard.openSession();
  flooder.bind('flooder');
  const other = await guard.openSession();
  other.bind('other');
  const flood = Array.from({ length: 3 * MAX_LOOKUPS_IN_FLIGHT_PER_REQUEST }, (_, i) =>
    tunnel(flooder, `n${i}.silent.test`),
  );
  await silentAtLeast(MAX_LOOKUPS_IN_FLIGHT_PER_REQUEST);
  assert.match(await tunnel(other, 'fast.test'), /^HTTP\/1\.1 200 Connection Established\r\n\r\nhello$/);
  assert.equal(silent.length, MAX_LOOKUPS_IN_FLIGHT_PER_REQUEST, "the flood's further lookups wait their turn");
  assert.equal(flooder.lookupsInFlight, MAX_LOOKUPS_IN_FLIGHT_PER_REQUEST);
  // Each lookup that ends (here: fails) lets the next of the same request start.
  silent[0]?.fail();
  await silentAtLeast(MAX_LOOKUPS_IN_FLIGHT_PER_REQUEST + 1);
  for (let i = 0; i < flood.length; i++) {
    await silentAtLeast(i + 1);
    silent[i]?.fail();
  }
  for (const answer of await Promise.all(flood)) assert.match(answer, /^HTTP\/1\.1 403 /);
  assert.equal(flooder.lookupsInFlight, 0);
  await flooder.close();
  await other.close();
});

test('the guard resolver (DNS_SERVERS) answers from its servers and ends a lookup its server never answers', async () => {
  const dns = await new LoopbackDns({ 'a.fast.test': '192.0.2.7' }, 'silent.test').start();
  try {
    const resolve = dnsResolver([`127.0.0.1:${dns.port}`]);
    assert.deepEqual(await resolve('a.fast.test'), [{ address: '192.0.2.7', family: 4 }]);
    await assert.rejects(resolve('nowhere.test'));
    // Rejected by its deadline, not left pending: a hang fails this test by its timeout.
    await assert.rejects(resolve('x.silent.test'));
    assert.ok(dns.silentNames.has('x.silent.test'), 'the silent server was asked');
  } finally {
    dns.close();
  }
});

test('DNS_SERVERS takes addresses with optional ports and refuses names', () => {
  assert.deepEqual(loadConfig({ DNS_SERVERS: ' 10.0.0.2, 127.0.0.1:5353 ,[::1]:53,fd00::53' }).dnsServers, [
    '10.0.0.2:53',
    '127.0.0.1:5353',
    '[::1]:53',
    '[fd00::53]:53',
  ]);
  assert.deepEqual(loadConfig({}).dnsServers, []);
  assert.throws(() => loadConfig({ DNS_SERVERS: 'dns.example' }), /DNS_SERVERS/);
  assert.throws(() => loadConfig({ DNS_SERVERS: '10.0.0.2:99999' }), /DNS_SERVERS/);
});
