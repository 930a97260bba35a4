// Reaching a target through an upstream proxy the operator named (PROXIES,
// docs/network.md "Upstream proxies"): HTTP CONNECT, over TCP or TLS, with
// Proxy-Authorization; or SOCKS5 with user and password (RFC 1928, RFC 1929).
// The guard has judged the target before it comes here: this only opens the
// tunnel, to the address the guard checked (or, for a proxy that may resolve
// names, to the name the guard checked). The proxy's own address is the
// operator's choice and is not judged.
//
// SECURITY: the credentials go to the proxy's socket and nowhere else. Every
// error is written here, naming the proxy by its name and saying what failed;
// no message of a socket, a TLS library or the proxy is passed on.
import { isIP, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import type { UpstreamProxy } from '../common/config.js';
import type { ProxyFailureKind } from '../protocol/egress.js';
import type { ResolvedAddress, Resolver } from './checker.js';

/** The net::ERR_… name Chromium itself gives each kind of proxy failure. */
const NET_ERROR: Readonly<Record<ProxyFailureKind, string>> = {
  unreachable: 'net::ERR_PROXY_CONNECTION_FAILED',
  auth: 'net::ERR_PROXY_AUTH_REQUESTED',
  refused: 'net::ERR_TUNNEL_CONNECTION_FAILED',
  socks: 'net::ERR_SOCKS_CONNECTION_FAILED',
  protocol: 'net::ERR_PROXY_CONNECTION_FAILED',
};

/** A proxy failure: `message` names the proxy and what failed, never its address or credentials. */
export class ProxyError extends Error {
  override name = 'ProxyError';
  constructor(
    readonly proxy: string,
    readonly kind: ProxyFailureKind,
    detail: string,
  ) {
    super(`upstream proxy "${proxy}" ${detail}`);
  }

  /** As a page's network error: Chromium's name for the failure, then what happened. */
  get netError(): string {
    return `${NET_ERROR[this.kind]} (${this.message})`;
  }
}

/** Where the guard wants to go: the name it judged, the address it judged, the port. */
export interface TunnelTarget {
  /** The host as the request named it, normalised (normalizeHost); an IP literal when it named one. */
  readonly host: string;
  readonly address: string;
  readonly family: 4 | 6;
  readonly port: number;
}

export interface ProxyDialer {
  /** Opens the TCP connection to the proxy itself (the guard's connector: tests record and bound it). */
  connect(target: { host: string; address: string; family: 4 | 6; port: number }, timeoutMs: number): Promise<Socket>;
  /** Resolves the proxy's own name, when PROXIES gives a name. */
  resolve: Resolver;
  /** TLS options for https:// proxies beyond the defaults (tests pass their own CA). */
  readonly tls?: Pick<ConnectionOptions, 'ca'>;
}

/** How much of a proxy's answer to CONNECT is read, at most, before it is called malformed. */
const MAX_PROXY_HEAD_BYTES = 16 * 1024;

/** SOCKS5 reply codes (RFC 1928 §6); 2 is the proxy refusing the target. */
const SOCKS_REPLIES: Readonly<Record<number, string>> = {
  1: 'general SOCKS server failure',
  2: 'connection not allowed by ruleset',
  3: 'network unreachable',
  4: 'host unreachable',
  5: 'connection refused by the target',
  6: 'TTL expired',
  7: 'command not supported',
  8: 'address type not supported',
};

/** Node's connection error codes, said in words (the proxy's address stays out of the message). */
function unreachableDetail(e: unknown): string {
  const code = (e as { code?: unknown }).code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'is unreachable (connection refused)';
    case 'ETIMEDOUT':
      return 'is unreachable (connection timed out)';
    case 'ECONNRESET':
      return 'is unreachable (connection reset)';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'is unreachable (no route to it)';
    default:
      return 'is unreachable';
  }
}

/**
 * Reads a socket in paused mode, only as far as the handshake needs: what
 * arrives beyond it (the target's first bytes) is given back to the socket.
 */
class HandshakeReader {
  readonly #socket: Socket;
  #buffered: Buffer = Buffer.alloc(0);
  #ended: Error | undefined;
  #wake: (() => void) | undefined;
  readonly #onReadable = (): void => {
    let chunk: Buffer | null;
    while ((chunk = this.#socket.read() as Buffer | null) !== null)
      this.#buffered = Buffer.concat([this.#buffered, chunk]);
    this.#wake?.();
  };
  readonly #onEnd = (): void => {
    this.#ended ??= Object.assign(new Error('the proxy closed the connection'), { code: 'ECONNRESET' });
    this.#wake?.();
  };
  readonly #onError = (e: Error): void => {
    this.#ended ??= e;
    this.#wake?.();
  };

  constructor(socket: Socket) {
    this.#socket = socket;
    socket.on('readable', this.#onReadable);
    socket.on('end', this.#onEnd);
    socket.on('close', this.#onEnd);
    socket.on('error', this.#onError);
  }

  /** Waits until `complete` finds a whole message in what was read; returns it and keeps the rest. */
  async read(complete: (b: Buffer) => number | undefined, maxBytes: number): Promise<Buffer> {
    for (;;) {
      const n = complete(this.#buffered);
      if (n !== undefined) {
        const out = this.#buffered.subarray(0, n);
        this.#buffered = this.#buffered.subarray(n);
        return out;
      }
      if (this.#buffered.length > maxBytes) throw new ProtocolError('sent an answer too long');
      if (this.#ended) throw this.#ended;
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }

  async bytes(n: number): Promise<Buffer> {
    return await this.read((b) => (b.length >= n ? n : undefined), n);
  }

  /** Stops reading; what was read past the handshake goes back to the socket for the tunnel. */
  release(): void {
    this.#socket.off('readable', this.#onReadable);
    this.#socket.off('end', this.#onEnd);
    this.#socket.off('close', this.#onEnd);
    this.#socket.off('error', this.#onError);
    if (this.#buffered.length > 0) this.#socket.unshift(this.#buffered);
  }
}

/** The proxy answered something that is not the protocol. */
class ProtocolError extends Error {}

function authority(host: string, port: number): string {
  return `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

/** What the proxy is asked to reach: the checked address, or the checked name for a proxy that may resolve names. */
export function proxyDestination(proxy: UpstreamProxy, target: TunnelTarget): string {
  // SECURITY: by default the proxy is given the address the guard judged, so a
  // proxy inside the operator's network can never be pointed at it by a name
  // that resolves differently there. A proxy marked mayResolve gets the name,
  // which the guard has checked resolves to allowed addresses here too.
  return proxy.mayResolve && isIP(target.host) === 0 ? target.host : target.address;
}

async function httpConnect(socket: Socket, proxy: UpstreamProxy, target: TunnelTarget): Promise<void> {
  const where = authority(proxyDestination(proxy, target), target.port);
  const auth =
    proxy.username === undefined
      ? ''
      : `Proxy-Authorization: Basic ${Buffer.from(`${proxy.username}:${proxy.password ?? ''}`, 'utf8').toString('base64')}\r\n`;
  socket.write(`CONNECT ${where} HTTP/1.1\r\nHost: ${where}\r\n${auth}\r\n`);
  const reader = new HandshakeReader(socket);
  try {
    const head = await reader.read((b) => {
      const end = b.indexOf('\r\n\r\n');
      return end < 0 ? undefined : end + 4;
    }, MAX_PROXY_HEAD_BYTES);
    const status = /^HTTP\/1\.[01] (\d{3})[ \r]/.exec(head.toString('latin1'));
    if (!status) throw new ProxyError(proxy.name, 'protocol', 'sent an answer to CONNECT that is not HTTP');
    const code = Number(status[1]);
    // 407 is the standard answer; tinyproxy answers 401 to a CONNECT with wrong credentials.
    if (code === 407 || code === 401)
      throw new ProxyError(
        proxy.name,
        'auth',
        proxy.username === undefined
          ? `asks for credentials (HTTP ${code}) and PROXIES gives none`
          : `refused its credentials (HTTP ${code})`,
      );
    if (code < 200 || code > 299) throw new ProxyError(proxy.name, 'refused', `refused the target (HTTP ${code})`);
  } finally {
    reader.release();
  }
}

async function socks5Connect(socket: Socket, proxy: UpstreamProxy, target: TunnelTarget): Promise<void> {
  const reader = new HandshakeReader(socket);
  try {
    const withPassword = proxy.username !== undefined;
    // SECURITY: with credentials only user/password is offered, so a proxy cannot
    // take the request without them (and a server that answers "no auth" is not ours).
    socket.write(Buffer.from([5, 1, withPassword ? 2 : 0]));
    const [version, method] = await reader.bytes(2);
    if (version !== 5) throw new ProxyError(proxy.name, 'protocol', 'is not a SOCKS5 server');
    if (method === 0xff)
      throw new ProxyError(proxy.name, 'auth', 'accepts none of the offered SOCKS5 authentication methods');
    if (method !== (withPassword ? 2 : 0))
      throw new ProxyError(proxy.name, 'protocol', 'chose a SOCKS5 authentication method that was not offered');
    if (withPassword) {
      const user = Buffer.from(proxy.username ?? '', 'utf8');
      const pass = Buffer.from(proxy.password ?? '', 'utf8');
      socket.write(Buffer.concat([Buffer.from([1, user.length]), user, Buffer.from([pass.length]), pass]));
      const [, status] = await reader.bytes(2);
      if (status !== 0) throw new ProxyError(proxy.name, 'auth', 'refused its SOCKS5 user name and password');
    }
    const destination = proxyDestination(proxy, target);
    const family = isIP(destination);
    let address: Buffer;
    if (family === 4) address = Buffer.from([1, ...destination.split('.').map(Number)]);
    else if (family === 6) address = Buffer.concat([Buffer.from([4]), ipv6Bytes(destination)]);
    else {
      const name = Buffer.from(destination, 'utf8');
      if (name.length > 255) throw new ProxyError(proxy.name, 'refused', 'cannot be given a host name this long');
      address = Buffer.concat([Buffer.from([3, name.length]), name]);
    }
    const port = Buffer.alloc(2);
    port.writeUInt16BE(target.port);
    socket.write(Buffer.concat([Buffer.from([5, 1, 0]), address, port]));
    // VER and REP first: a refusal need not carry a well-formed bound address.
    const [replyVersion, rep = 1] = await reader.bytes(2);
    if (replyVersion !== 5) throw new ProxyError(proxy.name, 'protocol', 'sent a SOCKS5 reply that is not SOCKS5');
    if (rep !== 0)
      throw new ProxyError(
        proxy.name,
        rep === 2 ? 'refused' : 'socks',
        `${rep === 2 ? 'refused the target' : 'failed'} (SOCKS5 reply ${rep}: ${SOCKS_REPLIES[rep] ?? 'unknown'})`,
      );
    await reader.read((b) => boundAddressLength(b), 260);
  } finally {
    reader.release();
  }
}

/** The length of the rest of a SOCKS5 reply (RSV, ATYP, BND.ADDR, BND.PORT) in `b`, or undefined while incomplete. */
function boundAddressLength(b: Buffer): number | undefined {
  if (b.length < 3) return undefined;
  const atyp = b[1];
  if (atyp !== 1 && atyp !== 3 && atyp !== 4)
    throw new ProtocolError('sent a SOCKS5 reply with an unknown address type');
  const n = atyp === 1 ? 8 : atyp === 4 ? 20 : 5 + (b[2] ?? 0);
  return b.length >= n ? n : undefined;
}

function ipv6Bytes(address: string): Buffer {
  const out = Buffer.alloc(16);
  const [head = '', tail] = address.split('::');
  const groups = (s: string): string[] => (s === '' ? [] : s.split(':'));
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  // An embedded IPv4 (::ffff:1.2.3.4) is two groups.
  const expand = (g: string[]): number[] =>
    g.flatMap((x) => {
      if (!x.includes('.')) return [parseInt(x, 16)];
      const [a = 0, b = 0, c = 0, d = 0] = x.split('.').map(Number);
      return [(a << 8) | b, (c << 8) | d];
    });
  const hs = expand(h);
  const ts = expand(t);
  const all = [...hs, ...Array<number>(8 - hs.length - ts.length).fill(0), ...ts];
  all.forEach((v, i) => out.writeUInt16BE(v & 0xffff, i * 2));
  return out;
}

async function proxyAddress(proxy: UpstreamProxy, resolve: Resolver): Promise<ResolvedAddress> {
  const family = isIP(proxy.host);
  if (family !== 0) return { address: proxy.host, family: family === 6 ? 6 : 4 };
  let answers: readonly ResolvedAddress[];
  try {
    answers = await resolve(proxy.host);
  } catch {
    throw new ProxyError(proxy.name, 'unreachable', 'is unreachable (its host name did not resolve)');
  }
  const first = answers[0];
  if (!first) throw new ProxyError(proxy.name, 'unreachable', 'is unreachable (its host name did not resolve)');
  return first;
}

/**
 * A socket to `target` through `proxy`, within timeoutMs from the start (the
 * proxy's own connection, TLS and the handshake together). Throws ProxyError.
 */
export async function dialThroughProxy(
  proxy: UpstreamProxy,
  target: TunnelTarget,
  dialer: ProxyDialer,
  timeoutMs: number,
): Promise<Socket> {
  const deadline = performance.now() + timeoutMs;
  const left = (): number => Math.max(1, Math.round(deadline - performance.now()));
  const at = await proxyAddress(proxy, dialer.resolve);
  let raw: Socket;
  try {
    // SECURITY: the proxy's own address is not judged by the policy (the operator chose it).
    raw = await dialer.connect({ host: proxy.host, address: at.address, family: at.family, port: proxy.port }, left());
  } catch (e) {
    throw new ProxyError(proxy.name, 'unreachable', unreachableDetail(e));
  }
  // From here until the guard pipes it, an error on the socket only ends it (never the process).
  raw.on('error', () => raw.destroy());
  let socket: Socket = raw;
  const timer = setTimeout(() => {
    socket.destroy(Object.assign(new Error('the proxy did not answer in time'), { code: 'ETIMEDOUT' }));
  }, left());
  try {
    if (proxy.protocol === 'https') {
      socket = await startTls(raw, proxy, dialer);
      socket.on('error', () => socket.destroy());
    }
    if (proxy.protocol === 'socks5') await socks5Connect(socket, proxy, target);
    else await httpConnect(socket, proxy, target);
    return socket;
  } catch (e) {
    socket.destroy();
    raw.destroy();
    if (e instanceof ProxyError) throw e;
    if (e instanceof ProtocolError) throw new ProxyError(proxy.name, 'protocol', e.message);
    if ((e as { code?: unknown }).code === 'ETIMEDOUT')
      throw new ProxyError(proxy.name, 'unreachable', `did not answer within ${timeoutMs} ms`);
    throw new ProxyError(proxy.name, 'unreachable', 'closed the connection during the handshake');
  } finally {
    clearTimeout(timer);
  }
}

async function startTls(raw: Socket, proxy: UpstreamProxy, dialer: ProxyDialer): Promise<Socket> {
  return await new Promise<Socket>((resolve, reject) => {
    const tls = tlsConnect({
      socket: raw,
      ...(isIP(proxy.host) === 0 ? { servername: proxy.host } : {}),
      // The certificate is checked against the name in PROXIES (Node's default CAs), as for any HTTPS server.
      ...(dialer.tls?.ca === undefined ? {} : { ca: dialer.tls.ca }),
    });
    const fail = (e: Error): void => {
      tls.off('secureConnect', done);
      raw.off('close', closed);
      tls.destroy();
      const code = (e as { code?: unknown }).code;
      reject(
        new ProxyError(
          proxy.name,
          'unreachable',
          `failed the TLS handshake${typeof code === 'string' && /^[A-Z_]+$/.test(code) ? ` (${code})` : ''}`,
        ),
      );
    };
    const closed = (): void => fail(new Error('closed'));
    const done = (): void => {
      tls.off('error', fail);
      raw.off('close', closed);
      resolve(tls);
    };
    tls.once('error', fail);
    raw.once('close', closed);
    tls.once('secureConnect', done);
  });
}
