// The upstream proxy handshakes (src/egress/upstream.ts) against scripted
// proxies on loopback: what each protocol sends, and each way a proxy can
// answer wrongly. The real proxies (tinyproxy, microsocks) are in
// test/e2e/egress/proxies.test.ts; these are the answers a real proxy rarely gives.
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { after, test } from 'node:test';
import type { UpstreamProxy } from '../../../src/common/config.js';
import { EgressChecker } from '../../../src/egress/checker.js';
import { EgressGuard, type Connector, type UpstreamTarget } from '../../../src/egress/guard.js';
import { dialThroughProxy, ProxyError, type ProxyDialer, type TunnelTarget } from '../../../src/egress/upstream.js';
import { silentLogger } from '../../../src/common/log.js';
import { testCertificate, type TestCertificate } from '../../helpers/tls.js';

const PASSWORD = 'up-Secret-3e9a';
const servers: Server[] = [];
/** Every connection a scripted proxy accepted: ended at the close, so close() does not wait for them. */
const accepted = new Set<Socket>();
after(async () => {
  for (const s of accepted) s.destroy();
  for (const s of servers) await new Promise<void>((r) => s.close(() => r()));
});

/** A proxy on loopback that runs `script` on each connection. */
async function scripted(script: (s: Socket) => void): Promise<number> {
  const server = createServer((s) => {
    accepted.add(s);
    s.on('error', () => undefined);
    script(s);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

const dials: UpstreamTarget[] = [];
/** Dials loopback only, and records each dial. */
const loopback: Connector = async (t) => {
  dials.push(t);
  if (t.address !== '127.0.0.1') throw Object.assign(new Error('not loopback'), { code: 'ECONNREFUSED' });
  return await new Promise<Socket>((resolve, reject) => {
    const s = connect({ host: t.address, port: t.port });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
};
const dialer: ProxyDialer = {
  connect: loopback,
  resolve: async () => {
    throw new Error('no DNS in this test');
  },
};

function proxy(port: number, extra: Partial<UpstreamProxy> = {}): UpstreamProxy {
  return {
    name: 'p1',
    protocol: 'http',
    host: '127.0.0.1',
    port,
    username: 'alice',
    password: PASSWORD,
    mayResolve: false,
    ...extra,
  };
}
const TARGET: TunnelTarget = { host: 'shop.example', address: '93.184.216.34', family: 4, port: 443 };

/** Reads everything the scripted proxy's peer sends until `done` says it has enough. */
function collect(s: Socket, done: (b: Buffer) => boolean, then: (b: Buffer) => void): void {
  let got = Buffer.alloc(0);
  const onData = (d: Buffer): void => {
    got = Buffer.concat([got, d]);
    if (done(got)) {
      s.off('data', onData);
      then(got);
    }
  };
  s.on('data', onData);
}
const headEnd = (b: Buffer): boolean => b.includes('\r\n\r\n');

async function failure(p: UpstreamProxy, target: TunnelTarget = TARGET, timeoutMs = 5_000): Promise<ProxyError> {
  try {
    const s = await dialThroughProxy(p, target, dialer, timeoutMs);
    s.destroy();
  } catch (e) {
    assert.ok(e instanceof ProxyError, String(e));
    assert.ok(!e.message.includes(PASSWORD) && !e.netError.includes(PASSWORD), 'no credential in the error');
    assert.ok(!e.message.includes('127.0.0.1'), "the proxy's address stays out of the error");
    return e;
  }
  assert.fail('the dial did not fail');
}

test('HTTP CONNECT asks for the checked address with Basic Proxy-Authorization; the bytes after the 200 reach the tunnel', async () => {
  let request = '';
  const port = await scripted((s) =>
    collect(s, headEnd, (b) => {
      request = b.toString('latin1');
      // The answer and the target's first bytes in one write: they must not be lost.
      s.write('HTTP/1.1 200 Connection established\r\nX-Proxy: yes\r\n\r\nFIRST-BYTES');
      s.on('data', (d) => s.write(d));
    }),
  );
  const s = await dialThroughProxy(proxy(port), TARGET, dialer, 5_000);
  const first = await new Promise<string>((resolve) => s.once('data', (d: Buffer) => resolve(d.toString())));
  assert.equal(first, 'FIRST-BYTES');
  s.write('echo');
  assert.equal(await new Promise<string>((resolve) => s.once('data', (d: Buffer) => resolve(d.toString()))), 'echo');
  s.destroy();
  assert.match(request, /^CONNECT 93\.184\.216\.34:443 HTTP\/1\.1\r\nHost: 93\.184\.216\.34:443\r\n/);
  assert.ok(request.includes(`Proxy-Authorization: Basic ${Buffer.from(`alice:${PASSWORD}`).toString('base64')}\r\n`));
});

test('a proxy without credentials is sent no Proxy-Authorization; a may-resolve proxy is asked for the name; IPv6 is bracketed', async () => {
  const requests: string[] = [];
  const port = await scripted((s) =>
    collect(s, headEnd, (b) => {
      requests.push(b.toString('latin1'));
      s.end('HTTP/1.1 200 OK\r\n\r\n');
    }),
  );
  const open = proxy(port, { username: undefined, password: undefined });
  (await dialThroughProxy(open, TARGET, dialer, 5_000)).destroy();
  (await dialThroughProxy({ ...open, mayResolve: true }, TARGET, dialer, 5_000)).destroy();
  (
    await dialThroughProxy(open, { host: '2001:db8::1', address: '2001:db8::1', family: 6, port: 80 }, dialer, 5_000)
  ).destroy();
  assert.ok(!(requests[0] ?? '').toLowerCase().includes('proxy-authorization'));
  assert.match(requests[0] ?? '', /^CONNECT 93\.184\.216\.34:443 /);
  assert.match(requests[1] ?? '', /^CONNECT shop\.example:443 /);
  assert.match(requests[2] ?? '', /^CONNECT \[2001:db8::1\]:80 /);
});

test('HTTP proxy answers: 407 is an authentication failure, 403 a refused target, garbage a protocol failure', async () => {
  const answer = (text: string): Promise<number> => scripted((s) => collect(s, headEnd, () => s.end(text)));
  const e407 = await failure(proxy(await answer('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n')));
  assert.equal(e407.kind, 'auth');
  assert.equal(e407.message, 'upstream proxy "p1" refused its credentials (HTTP 407)');
  assert.match(e407.netError, /^net::ERR_PROXY_AUTH_REQUESTED \(/);
  const e403 = await failure(proxy(await answer('HTTP/1.1 403 Forbidden\r\n\r\n')));
  assert.equal(e403.kind, 'refused');
  assert.equal(e403.message, 'upstream proxy "p1" refused the target (HTTP 403)');
  const junk = await failure(proxy(await answer('SSH-2.0-OpenSSH\r\n\r\n')));
  assert.equal(junk.kind, 'protocol');
  const endless = await failure(
    proxy(await scripted((s) => collect(s, headEnd, () => s.write('HTTP/1.1 200 OK\r\n' + 'X: y\r\n'.repeat(5000))))),
  );
  assert.equal(endless.kind, 'protocol');
  assert.match(endless.message, /too long/);
});

test('a proxy that accepts the connection and says nothing fails as unreachable at the deadline, not later', async () => {
  const e = await failure(proxy(await scripted(() => undefined)), TARGET, 300);
  assert.equal(e.kind, 'unreachable');
  assert.equal(e.message, 'upstream proxy "p1" did not answer within 300 ms');
});

test('a proxy that closes during the handshake, and one nobody listens on: unreachable', async () => {
  const closes = await failure(proxy(await scripted((s) => s.destroy())));
  assert.equal(closes.kind, 'unreachable');
  const free = await scripted(() => undefined);
  await new Promise<void>((r) => servers.pop()?.close(() => r()));
  const gone = await failure(proxy(free));
  assert.equal(gone.kind, 'unreachable');
  assert.equal(gone.message, 'upstream proxy "p1" is unreachable (connection refused)');
});

/** A SOCKS5 server that answers the greeting with `method`, then (for user/password) `authStatus`, then `reply`. */
async function socks(opts: {
  method: number;
  authStatus?: number;
  reply?: number[];
  seen?: { greeting?: Buffer; auth?: Buffer; request?: Buffer };
}): Promise<number> {
  return await scripted((s) => {
    let step = 0;
    s.on('data', (d: Buffer) => {
      if (step === 0) {
        if (opts.seen) opts.seen.greeting = d;
        s.write(Buffer.from([5, opts.method]));
        step = opts.method === 2 ? 1 : 2;
      } else if (step === 1) {
        if (opts.seen) opts.seen.auth = d;
        s.write(Buffer.from([1, opts.authStatus ?? 0]));
        step = 2;
      } else {
        if (opts.seen) opts.seen.request = d;
        s.write(Buffer.from(opts.reply ?? [5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
        step = 3;
      }
    });
  });
}

test('SOCKS5: user/password (RFC 1929) is the only method offered with credentials; the checked address is asked for', async () => {
  const seen: { greeting?: Buffer; auth?: Buffer; request?: Buffer } = {};
  const port = await socks({ method: 2, seen });
  (await dialThroughProxy(proxy(port, { protocol: 'socks5' }), TARGET, dialer, 5_000)).destroy();
  assert.deepEqual([...(seen.greeting ?? [])], [5, 1, 2]);
  const user = Buffer.from('alice');
  const pass = Buffer.from(PASSWORD);
  assert.deepEqual(seen.auth, Buffer.concat([Buffer.from([1, user.length]), user, Buffer.from([pass.length]), pass]));
  assert.deepEqual([...(seen.request ?? [])], [5, 1, 0, 1, 93, 184, 216, 34, 1, 187]);
});

test('SOCKS5: a may-resolve proxy is given the name (ATYP 3); IPv6 goes as 16 bytes (ATYP 4)', async () => {
  const seen: { request?: Buffer } = {};
  const port = await socks({ method: 0, seen });
  const open = proxy(port, { protocol: 'socks5', username: undefined, password: undefined });
  (await dialThroughProxy({ ...open, mayResolve: true }, TARGET, dialer, 5_000)).destroy();
  const name = Buffer.from('shop.example');
  assert.deepEqual(seen.request, Buffer.concat([Buffer.from([5, 1, 0, 3, name.length]), name, Buffer.from([1, 187])]));
  (
    await dialThroughProxy(open, { host: '::ffff:1.2.3.4', address: '2001:db8::1', family: 6, port: 80 }, dialer, 5_000)
  ).destroy();
  assert.deepEqual(
    seen.request,
    Buffer.from([5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 80]),
  );
});

test('SOCKS5: a proxy that takes "no authentication" when only user/password was offered is refused (no downgrade)', async () => {
  const e = await failure(proxy(await socks({ method: 0 }), { protocol: 'socks5' }));
  assert.equal(e.kind, 'protocol');
});

test('SOCKS5 failures: no acceptable method and refused credentials are authentication failures', async () => {
  const none = await failure(proxy(await socks({ method: 0xff }), { protocol: 'socks5' }));
  assert.equal(none.kind, 'auth');
  const wrong = await failure(proxy(await socks({ method: 2, authStatus: 1 }), { protocol: 'socks5' }));
  assert.equal(wrong.kind, 'auth');
  assert.equal(wrong.message, 'upstream proxy "p1" refused its SOCKS5 user name and password');
});

test('SOCKS5 replies: 2 (not allowed by ruleset) is the proxy refusing the target; the others are SOCKS errors, named', async () => {
  const refused = await failure(
    proxy(await socks({ method: 2, reply: [5, 2, 0, 1, 0, 0, 0, 0, 0, 0] }), { protocol: 'socks5' }),
  );
  assert.equal(refused.kind, 'refused');
  assert.match(refused.message, /refused the target \(SOCKS5 reply 2: connection not allowed by ruleset\)/);
  // A failure need not carry a whole bound address.
  const unreachable = await failure(proxy(await socks({ method: 2, reply: [5, 4] }), { protocol: 'socks5' }));
  assert.equal(unreachable.kind, 'socks');
  assert.equal(unreachable.message, 'upstream proxy "p1" failed (SOCKS5 reply 4: host unreachable)');
  assert.match(unreachable.netError, /^net::ERR_SOCKS_CONNECTION_FAILED /);
  const http = await failure(
    proxy(await scripted((s) => s.end('HTTP/1.1 400 Bad Request\r\n\r\n')), { protocol: 'socks5' }),
  );
  assert.equal(http.kind, 'protocol');
});

test('an https:// proxy: CONNECT inside TLS, the certificate checked; one not trusted fails as unreachable', async (t) => {
  let made: TestCertificate;
  try {
    made = testCertificate('proxy.test', 'DNS:proxy.test');
  } catch {
    t.skip('openssl is not available to make a certificate');
    return;
  }
  const { cert } = made;
  let request = '';
  const server = createTlsServer({ key: made.key, cert }, (s) =>
    collect(s as unknown as Socket, headEnd, (b) => {
      request = b.toString('latin1');
      s.write('HTTP/1.1 200 OK\r\n\r\n');
      s.on('data', (d) => s.write(d));
    }),
  );
  server.on('secureConnection', (s) => accepted.add(s as unknown as Socket));
  server.on('connection', (s: Socket) => accepted.add(s));
  servers.push(server as unknown as Server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const tlsProxy = proxy(port, { protocol: 'https', host: 'proxy.test' });
  const named: ProxyDialer = { ...dialer, resolve: async () => [{ address: '127.0.0.1', family: 4 }] };
  const s = await dialThroughProxy(tlsProxy, TARGET, { ...named, tls: { ca: cert } }, 5_000);
  s.write('ping');
  assert.equal(await new Promise<string>((resolve) => s.once('data', (d: Buffer) => resolve(d.toString()))), 'ping');
  s.destroy();
  assert.match(request, /^CONNECT 93\.184\.216\.34:443 HTTP\/1\.1\r\n/);
  await assert.rejects(dialThroughProxy(tlsProxy, TARGET, named, 5_000), (e: unknown) => {
    assert.ok(e instanceof ProxyError);
    assert.equal(e.kind, 'unreachable');
    assert.match(e.message, /failed the TLS handshake/);
    return true;
  });
});

test('a request bound to a proxy the guard does not have never goes out directly', async () => {
  dials.length = 0;
  const target = await scripted((s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
  const guard = new EgressGuard({
    checker: new EgressChecker({
      allowlist: [{ host: '127.0.0.1', port: target }],
      protectedPorts: () => [],
      resolve: async () => [],
    }),
    connector: loopback,
    logger: silentLogger(),
  });
  await guard.listen();
  const session = await guard.openSession();
  session.bind('r1', 'ghost');
  try {
    const answer = await new Promise<string>((resolve) => {
      const c = connect({ host: '127.0.0.1', port: session.port });
      let got = '';
      c.on('data', (d: Buffer) => (got += d.toString()));
      c.on('close', () => resolve(got));
      c.write(`CONNECT 127.0.0.1:${target} HTTP/1.1\r\nHost: 127.0.0.1:${target}\r\n\r\n`);
    });
    assert.match(answer, /^HTTP\/1\.1 502 /);
    assert.match(answer, /x-pagescript-egress: PROXY_UNREACHABLE/);
    assert.deepEqual(dials, [], 'nothing was dialled');
    assert.match(session.recentFailure('127.0.0.1', target) ?? '', /upstream proxy "ghost" is not configured/);
    assert.equal(session.stats().proxyUnreachable, 1);
  } finally {
    await guard.close();
  }
});

test('an allow-listed local target is dialled directly through every proxy kind: the proxy is never asked', async () => {
  let proxyConnections = 0;
  const proxyPort = await scripted((s) => {
    proxyConnections++;
    s.destroy();
  });
  const target = await scripted((s) => s.end('hello'));
  const proxies: UpstreamProxy[] = [
    proxy(proxyPort, { name: 'http' }),
    proxy(proxyPort, { name: 'http-resolve', mayResolve: true }),
    proxy(proxyPort, { name: 'socks', protocol: 'socks5' }),
  ];
  const guard = new EgressGuard({
    checker: new EgressChecker({
      allowlist: [
        { host: '127.0.0.1', port: target },
        { host: 'localhost', port: target },
      ],
      protectedPorts: () => [],
      resolve: async () => [],
      localAddresses: () => [],
    }),
    connector: loopback,
    logger: silentLogger(),
    proxies,
  });
  await guard.listen();
  try {
    for (const p of proxies)
      for (const host of ['127.0.0.1', 'localhost']) {
        dials.length = 0;
        const session = await guard.openSession();
        session.bind(`r-${p.name}-${host}`, p.name);
        const answer = await new Promise<string>((resolve) => {
          const c = connect({ host: '127.0.0.1', port: session.port });
          let got = '';
          c.on('data', (d: Buffer) => (got += d.toString()));
          c.on('close', () => resolve(got));
          c.write(`CONNECT ${host}:${target} HTTP/1.1\r\nHost: ${host}:${target}\r\n\r\n`);
        });
        assert.match(answer, /^HTTP\/1\.1 200 Connection Established\r\n\r\nhello$/, `${p.name} ${host}`);
        assert.deepEqual(
          dials.map((d) => `${d.address}:${d.port}`),
          [`127.0.0.1:${target}`],
          `${p.name} ${host}: dialled directly`,
        );
        await session.close();
      }
    assert.equal(proxyConnections, 0, 'no proxy was connected to');
  } finally {
    await guard.close();
  }
});
