// The egress guard: the only proxy Chromium is allowed to use. It serves plain
// HTTP requests (absolute-form) and CONNECT tunnels (HTTPS, WebSocket), asks the
// EgressChecker for each one, and connects to exactly the address it checked.
// Each browser context reaches it on a port of its own (see session.ts), so the
// guard knows whose request it carries and refuses what belongs to none.
import { randomInt } from 'node:crypto';
import {
  createServer,
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import {
  connect as netConnect,
  createServer as createNetServer,
  isIP,
  type Server as NetServer,
  type Socket,
} from 'node:net';
import { pipeline, type Duplex } from 'node:stream';
import type { ConnectionOptions } from 'node:tls';
import type { UpstreamProxy } from '../common/config.js';
import type { Logger } from '../common/log.js';
import { normalizeHost, systemResolver, type EgressChecker, type Resolver } from './checker.js';
import { EgressSession } from './session.js';
import { dialThroughProxy, ProxyError } from './upstream.js';
import { loopbackPeerUid, type Endpoint } from './peer-uid.js';
import { background } from '../common/background.js';
import type { GuardCounts, GuardLimits } from '../protocol/egress.js';
import { HOP_BY_HOP_HEADERS } from '../protocol/http-headers.js';
import type { EgressRefusalKind } from '../protocol/security.js';
import {
  MAX_REFUSALS_LOGGED_PER_REQUEST,
  MAX_REQUEST_HEAD_BYTES,
  NET_ERRORS,
  REFUSED_HEADER,
  type EgressDecision,
} from '../protocol/egress.js';

// Declared with the messages (src/protocol/egress.ts), which the front may read; re-exported for the guard's users.
export type { GuardCounts, GuardLimits };

export interface UpstreamTarget {
  readonly host: string;
  readonly address: string;
  readonly family: 4 | 6;
  readonly port: number;
}

/** Opens the upstream socket. Injectable: tests pass one that records and refuses non-loopback. */
export type Connector = (target: UpstreamTarget, timeoutMs: number) => Promise<Socket>;

export const netConnector: Connector = (t, timeoutMs) =>
  new Promise((resolve, reject) => {
    // SECURITY: connect to the address the checker approved, never to the name.
    const s = netConnect({ host: t.address, port: t.port, family: t.family });
    const timer = setTimeout(() => {
      const err = Object.assign(new Error(`connect timeout to ${t.host}:${t.port}`), { code: 'ETIMEDOUT' });
      s.destroy(err);
    }, timeoutMs);
    s.once('connect', () => {
      clearTimeout(timer);
      resolve(s);
    });
    s.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });

export const DEFAULT_GUARD_LIMITS: GuardLimits = {
  connectTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  totalTimeoutMs: 10 * 60_000,
  maxBytesPerConnection: 512 * 1024 * 1024,
};

/** A reason phrase or header value Node can write again (no control characters but tab). */
const WRITABLE_TEXT = /^[\t\x20-\x7e\x80-\xff]*$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Interim (1xx) answers taken before the final one; past it the upstream is flooding, not answering. */
export const MAX_INFORMATIONAL_ANSWERS = 16;

export interface GuardEvents {
  /** A connection was refused by policy; requestId is absent when it belonged to no request. */
  onRefused?(host: string, port: number, reason: string, requestId: string | undefined, kind?: EgressRefusalKind): void;
}

/** What the guard has seen since it started, every port together. */

/** Who a connection belongs to: a live request's session, or why none. */
type Owner = { session: EgressSession } | { session?: undefined; why: string };

export class EgressGuard {
  /** Parses every connection; never listens itself (connections are handed to it). */
  readonly #http: Server;
  /** The browser-wide port: Chromium's own requests, which belong to no request. */
  readonly #main: NetServer;
  readonly #checker: EgressChecker;
  readonly #connect: Connector;
  readonly #limits: GuardLimits;
  readonly #log: Logger;
  readonly #events: GuardEvents;
  readonly #sockets = new Set<Duplex>();
  readonly #sessionOf = new WeakMap<Duplex, EgressSession>();
  readonly #sessions = new Set<EgressSession>();
  readonly #counts: GuardCounts = { clientConnections: 0, unclaimed: 0, upstreamConnections: 0, otherUsers: 0 };
  /** When set, a context's port takes connections only from sockets these users own (the slots'). */
  readonly #clientUids: readonly number[] | undefined;
  readonly #peerUid: (peer: Endpoint, local: Endpoint) => Promise<number | undefined>;
  /** The upstream proxies by name, with their credentials (EgressInit). */
  readonly #proxies: ReadonlyMap<string, UpstreamProxy>;
  readonly #resolveProxy: Resolver;
  readonly #proxyTls: Pick<ConnectionOptions, 'ca'> | undefined;
  /** The ports every listener takes one of (EGRESS_PORTS); undefined: any free one (unit tests). */
  readonly #ports: { readonly first: number; readonly last: number } | undefined;
  #port = 0;
  #closed = false;

  constructor(opts: {
    checker: EgressChecker;
    connector?: Connector;
    limits?: Partial<GuardLimits>;
    logger: Logger;
    events?: GuardEvents;
    /** Upstream proxies a request's session may name (PROXIES); SECURITY: they hold credentials. */
    proxies?: readonly UpstreamProxy[];
    /** Resolves the proxies' own host names (the system's resolver by default). */
    resolveProxy?: Resolver;
    /** Tests: the CA an https:// proxy's certificate is checked against. */
    proxyTls?: Pick<ConnectionOptions, 'ca'>;
    /**
     * SECURITY: the only users whose sockets a context's port takes (the slots'
     * and their Chromiums', when the service runs as root); a session opened with
     * a uid of its own takes that one alone. Undefined: any local process.
     */
    clientUids?: readonly number[];
    /**
     * SECURITY: the range every port of the guard is taken from (EGRESS_PORTS): the
     * only ports the kernel lock lets the slots' users reach. Undefined: any free port.
     */
    ports?: { readonly first: number; readonly last: number };
    /** Who owns a loopback socket (the kernel's socket tables by default). */
    peerUid?: (peer: Endpoint, local: Endpoint) => Promise<number | undefined>;
  }) {
    this.#clientUids = opts.clientUids;
    this.#ports = opts.ports;
    this.#peerUid = opts.peerUid ?? loopbackPeerUid;
    this.#checker = opts.checker;
    this.#connect = opts.connector ?? netConnector;
    this.#proxies = new Map((opts.proxies ?? []).map((p) => [p.name, p]));
    this.#resolveProxy = opts.resolveProxy ?? systemResolver;
    this.#proxyTls = opts.proxyTls;
    this.#limits = { ...DEFAULT_GUARD_LIMITS, ...opts.limits };
    this.#log = opts.logger;
    this.#events = opts.events ?? {};
    this.#http = createServer({ keepAlive: true, maxHeaderSize: MAX_REQUEST_HEAD_BYTES }, (req, res) =>
      background(this.#onRequest(req, res), 'egress request', this.#log),
    );
    this.#http.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      background(this.#onConnect(req, socket, head), 'egress tunnel', this.#log),
    );
    this.#http.on('clientError', (e: Error, socket: Duplex) => this.#clientError(e, socket));
    // Requests with Upgrade (not CONNECT) are not proxied: Chromium tunnels WebSockets with CONNECT.
    this.#http.on('upgrade', (_req: IncomingMessage, socket: Duplex) => socket.destroy());
    this.#main = createNetServer((s) => this.#accept(s, undefined, undefined));
  }

  /** The browser-wide port (Chromium's --proxy-server), where nothing is let through. */
  get port(): number {
    return this.#port;
  }

  /** Every port the guard listens on now: no page may reach any of them. */
  ports(): number[] {
    return [this.#port, ...[...this.#sessions].map((s) => s.port)];
  }

  /** Client connections open now (Chromium's, to any of the guard's ports). */
  get openConnections(): number {
    return this.#sockets.size;
  }

  counts(): GuardCounts {
    return { ...this.#counts };
  }

  /** Listens on loopback only, for Chromium's own requests (all refused). */
  async listen(port = 0): Promise<number> {
    this.#port = await listenOnLoopback(this.#main, port, this.#ports);
    return this.#port;
  }

  /**
   * A port for one browser context, on loopback; it carries nothing until bound
   * to a request. `uid`: the slot user whose sockets alone it takes (when users are checked).
   */
  async openSession(uid?: number): Promise<EgressSession> {
    // SECURITY: the guard is down: the context is pointed at its closed browser-wide
    // port, so its traffic fails (fails closed) rather than the request erroring.
    if (this.#closed) return new EgressSession(undefined, this.#port, () => undefined);
    // SECURITY: a uid that is none of the slots' widens nothing: the port then takes no one.
    const allowed =
      this.#clientUids === undefined
        ? undefined
        : uid === undefined
          ? this.#clientUids
          : [uid].filter((u) => this.#clientUids?.includes(u));
    // Paused when connections are checked: nothing is read before the peer's owner is known.
    const server = createNetServer({ pauseOnConnect: allowed !== undefined });
    const port = await listenOnLoopback(server, 0, this.#ports);
    const session: EgressSession = new EgressSession(server, port, () => this.#sessions.delete(session));
    server.on('connection', (s: Socket) => this.#accept(s, session, allowed));
    this.#sessions.add(session);
    if (this.#closed) await session.close();
    return session;
  }

  #accept(s: Socket, session: EgressSession | undefined, allowed: readonly number[] | undefined): void {
    this.#counts.clientConnections++;
    s.on('error', () => s.destroy());
    if (session?.state === 'ended') {
      // SECURITY: a released context's connection is cut before a byte is read.
      this.#counts.unclaimed++;
      s.destroy();
      return;
    }
    this.#sockets.add(s);
    s.once('close', () => this.#sockets.delete(s));
    if (session) {
      this.#sessionOf.set(s, session);
      session.track(s);
    }
    if (!session || allowed === undefined) {
      this.#http.emit('connection', s);
      return;
    }
    // SECURITY: a context's port is on loopback, where every local process can
    // reach it; during a request it would be an open proxy (with the operator's
    // upstream credentials) for any of them. Only a socket of its slot's user
    // (that slot's Chromium) is served; any other is closed before a byte is read.
    const peer = { address: s.remoteAddress ?? '', port: s.remotePort ?? 0 };
    const local = { address: s.localAddress ?? '', port: s.localPort ?? 0 };
    this.#peerUid(peer, local).then(
      (uid) => {
        if (s.destroyed) return;
        if (uid === undefined || !allowed.includes(uid)) {
          this.#counts.otherUsers++;
          const n = this.#counts.otherUsers;
          // Bounded logging: a local process chooses how often it connects.
          if (n <= MAX_REFUSALS_LOGGED_PER_REQUEST || n % 1000 === 0)
            this.#log.warn(
              { port: local.port, uid: uid ?? 'unknown', refused: n },
              "egress refused a connection to a context's port from another user than its slot's",
            );
          s.destroy();
          return;
        }
        this.#http.emit('connection', s);
        s.resume();
      },
      () => s.destroy(),
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const s of this.#sockets) s.destroy();
    await Promise.all([
      ...[...this.#sessions].map((s) => s.close()),
      new Promise<void>((resolve) => this.#main.close(() => resolve())),
    ]);
  }

  /**
   * A request head past MAX_REQUEST_HEAD_BYTES is answered 431 (the page sees why,
   * not an empty response); a client that sends what is not HTTP is cut off.
   * Nothing it sent is logged.
   */
  #clientError(e: Error, socket: Duplex): void {
    if ((e as { code?: unknown }).code !== 'HPE_HEADER_OVERFLOW' || !socket.writable) {
      socket.destroy();
      return;
    }
    this.#owner(socket).session?.count('refused');
    const body = `pagescript egress guard: request headers over ${MAX_REQUEST_HEAD_BYTES} bytes\n`;
    socket.end(
      `HTTP/1.1 431 Request Header Fields Too Large\r\n${REFUSED_HEADER}: HEADERS_TOO_LARGE\r\n` +
        `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
  }

  #owner(socket: Duplex): Owner {
    const session = this.#sessionOf.get(socket);
    if (session?.state === 'live') return { session };
    if (!session) return { why: "no request (the browser's own traffic)" };
    return { why: session.state === 'spare' ? 'no request yet (a context not leased)' : 'the request has ended' };
  }

  #unclaimed(host: string, port: number, why: string): void {
    this.#counts.unclaimed++;
    this.#log.info({ host, port, reason: why }, 'egress refused');
    this.#events.onRefused?.(host, port, why, undefined);
  }

  /**
   * SECURITY: the request's key's hosts first (a host outside them is refused
   * without even being resolved), then the address policy, which no pattern opens.
   */
  async #decide(session: EgressSession, host: string, port: number): Promise<EgressDecision> {
    if (!session.mayReach(host, port)) {
      session.refusedByKey(host, port);
      return { ok: false, code: 'NOT_ALLOWED', reason: `${host}:${port} is outside this key's hosts` };
    }
    const d = await session.lookup(() => this.#checker.check(host, port));
    if (d.ok && !d.allowlisted && isIP(host) === 0) session.answeredPublic(host);
    // A name that answered a public address earlier in this request and a refused one now: rebinding.
    if (!d.ok && d.kind !== undefined && d.kind !== 'rebinding' && session.hasAnsweredPublic(host))
      return { ...d, kind: 'rebinding' };
    return d;
  }

  #refuse(session: EgressSession, host: string, port: number, reason: string, kind?: EgressRefusalKind): void {
    session.count('refused');
    const requestId = session.requestId;
    // SECURITY: a page chooses how often it is refused (a fetch loop: hundreds a
    // second); past the first few, a request's refusals are only counted, on its
    // own log line (egress.refused), not logged one by one.
    const refused = session.stats().refused;
    if (refused <= MAX_REFUSALS_LOGGED_PER_REQUEST)
      this.#log.warn({ requestId, host, port, reason, ...(kind ? { kind } : {}) }, 'egress refused');
    if (refused === MAX_REFUSALS_LOGGED_PER_REQUEST)
      this.#log.warn(
        { requestId, logged: MAX_REFUSALS_LOGGED_PER_REQUEST },
        "egress refused: this request's further refusals are counted, not logged",
      );
    this.#events.onRefused?.(host, port, reason, requestId, kind);
  }

  #failed(session: EgressSession, host: string, port: number, code: string): void {
    session.recordFailure(host, port, NET_ERRORS[code] ?? 'net::ERR_CONNECTION_FAILED');
  }

  /** The request's proxy failed: remembered (to name the page's error), counted and logged, by the proxy's name only. */
  #proxyFailed(session: EgressSession, host: string, port: number, e: ProxyError): void {
    session.recordFailure(host, port, e.netError);
    session.countProxyFailure(e.kind);
    this.#log.warn(
      { requestId: session.requestId, proxy: e.proxy, kind: e.kind, host, port, reason: e.message },
      'upstream proxy failed',
    );
  }

  /**
   * Opens the connection to host:port the checker approved: to the address it
   * judged, directly, or through the request's upstream proxy (public targets only).
   */
  async #dial(
    session: EgressSession,
    host: string,
    port: number,
    decision: { address: string; family: 4 | 6; allowlisted: boolean },
  ): Promise<Socket> {
    const name = session.proxy;
    const proxy = name === undefined ? undefined : this.#proxies.get(name);
    // SECURITY: a request bound to a proxy this guard does not have never goes out at all.
    if (name !== undefined && !proxy)
      throw new ProxyError(name, 'unreachable', 'is not configured in the egress guard');
    // SECURITY: an allow-listed local target is this machine's network, not the
    // proxy's: asked of a proxy, 127.0.0.1 or an intranet name would be the
    // proxy host's own (its admin ports). It is dialled directly, at the checked address.
    if (!proxy || decision.allowlisted)
      return await this.#connect(
        { host, address: decision.address, family: decision.family, port },
        this.#limits.connectTimeoutMs,
      );
    return await dialThroughProxy(
      proxy,
      { host: normalizeHost(host), address: decision.address, family: decision.family, port },
      {
        connect: this.#connect,
        resolve: this.#resolveProxy,
        ...(this.#proxyTls ? { tls: this.#proxyTls } : {}),
      },
      this.#limits.connectTimeoutMs,
    );
  }

  /** Counts an upstream connection, and its bytes as they flow, for its request (session.ts account). */
  #account(session: EgressSession, upstream: Socket): void {
    this.#counts.upstreamConnections++;
    session.account(upstream);
  }

  /** Bounds a piped connection: idle time, total time and bytes. */
  #bound(a: Duplex, b: Duplex): void {
    let bytes = 0;
    const kill = (): void => {
      a.destroy();
      b.destroy();
    };
    const count = (chunk: Buffer): void => {
      bytes += chunk.length;
      if (bytes > this.#limits.maxBytesPerConnection) kill();
    };
    a.on('data', count);
    b.on('data', count);
    const total = setTimeout(kill, this.#limits.totalTimeoutMs);
    total.unref();
    for (const s of [a, b]) {
      (s as Socket).setTimeout?.(this.#limits.idleTimeoutMs, kill);
      s.once('close', () => {
        clearTimeout(total);
        kill();
      });
      s.on('error', kill);
    }
  }

  /** Bounds an upstream socket of a plain request; the client's kept-alive connection lives on. */
  #boundUpstream(s: Socket): void {
    let bytes = 0;
    s.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > this.#limits.maxBytesPerConnection) s.destroy();
    });
    s.setTimeout(this.#limits.idleTimeoutMs, () => s.destroy());
    const total = setTimeout(() => s.destroy(), this.#limits.totalTimeoutMs);
    total.unref();
    s.once('close', () => clearTimeout(total));
  }

  async #onConnect(req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    client.on('error', () => client.destroy());
    // SECURITY: the port is the one the client asked for, default ports included
    // (a URL parser would drop ":80" and ":443" and leave us to guess).
    const target = parseAuthority(req.url ?? '');
    if (!target) {
      client.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const { host, port } = target;
    const owner = this.#owner(client);
    if (!owner.session) {
      this.#unclaimed(host, port, owner.why);
      client.end(`HTTP/1.1 403 Forbidden\r\n${REFUSED_HEADER}: NO_REQUEST\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    const { session } = owner;
    const decision = await this.#decide(session, host, port);
    if (!decision.ok) {
      if (decision.code === 'NOT_ALLOWED') this.#refuse(session, host, port, decision.reason, decision.kind);
      else session.count('refused');
      this.#failed(session, host, port, decision.code);
      client.end(`HTTP/1.1 403 Forbidden\r\n${REFUSED_HEADER}: ${decision.code}\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    let upstream: Socket;
    try {
      upstream = await this.#dial(session, host, port, decision);
    } catch (e) {
      let code: string;
      if (e instanceof ProxyError) {
        this.#proxyFailed(session, host, port, e);
        code = `PROXY_${e.kind.toUpperCase()}`;
      } else {
        code = (e as { code?: string }).code ?? 'ECONNREFUSED';
        this.#failed(session, host, port, code);
      }
      client.end(`HTTP/1.1 502 Bad Gateway\r\n${REFUSED_HEADER}: ${safeToken(code)}\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    this.#account(session, upstream);
    // The request may have ended, or the client gone, while we dialled.
    if (client.destroyed || session.state !== 'live') {
      upstream.destroy();
      client.destroy();
      return;
    }
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    this.#bound(client, upstream);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  async #onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let target: URL;
    try {
      // SECURITY: route by the request target (absolute-form), never by the Host header.
      target = new URL(req.url ?? '');
      if (target.protocol !== 'http:') throw new Error('not http');
    } catch {
      res
        .writeHead(400, { 'content-type': 'text/plain' })
        .end('pagescript egress guard: absolute http:// request target required\n');
      return;
    }
    const host = target.hostname;
    const port = Number(target.port || 80);
    const owner = this.#owner(req.socket);
    if (!owner.session) {
      this.#unclaimed(host, port, owner.why);
      res
        .writeHead(403, {
          'content-type': 'text/plain; charset=utf-8',
          [REFUSED_HEADER]: 'NO_REQUEST',
          connection: 'close',
        })
        .end(`pagescript egress guard: ${owner.why}\n`);
      return;
    }
    const { session } = owner;
    const decision = await this.#decide(session, host, port);
    if (!decision.ok) {
      this.#failed(session, host, port, decision.code);
      if (decision.code === 'NAME_NOT_RESOLVED') {
        session.count('refused');
        req.socket.destroy();
        return;
      }
      // A refusal by policy is a readable answer, so a script can see why.
      this.#refuse(session, host, port, decision.reason, decision.kind);
      res
        .writeHead(403, { 'content-type': 'text/plain; charset=utf-8', [REFUSED_HEADER]: decision.code })
        .end(`pagescript egress guard: ${decision.reason}\n`);
      return;
    }
    let socket: Socket;
    try {
      // Through a proxy, a plain request goes through a tunnel to port 80 as well
      // (CONNECT or SOCKS5), and the guard speaks HTTP to the target itself: see
      // docs/network.md "Upstream proxies" for why not an absolute-form request to the proxy.
      socket = await this.#dial(session, host, port, decision);
    } catch (e) {
      if (e instanceof ProxyError) this.#proxyFailed(session, host, port, e);
      else this.#failed(session, host, port, (e as { code?: string }).code ?? 'ECONNREFUSED');
      // An upstream that cannot be reached is a network error for the page, as without a proxy.
      req.socket.destroy();
      return;
    }
    this.#account(session, socket);
    if (req.socket.destroyed || session.state !== 'live') {
      socket.destroy();
      return;
    }
    this.#relay(session, req, res, target, socket);
  }

  /** Sends one plain request upstream on `socket` and its answer back; every path ends both sides. */
  #relay(session: EgressSession, req: IncomingMessage, res: ServerResponse, target: URL, socket: Socket): void {
    const host = target.hostname;
    const port = Number(target.port || 80);
    /** The upstream failed before an answer could be relayed: a network error for the page. */
    let failed = false;
    const fail = (code: string): void => {
      // The first cause names the failure; the close it brings about says nothing more.
      if (failed) return;
      failed = true;
      this.#failed(session, host, port, code);
      socket.destroy();
      if (!res.headersSent) req.socket.destroy();
      else res.destroy();
    };
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v !== undefined && !HOP_BY_HOP_HEADERS.has(k)) headers[k] = v;
    }
    headers.host = target.host;
    headers.connection = 'close';
    this.#boundUpstream(socket);
    let upstream: ClientRequest;
    try {
      upstream = httpRequest({
        createConnection: () => socket,
        method: req.method,
        path: `${target.pathname}${target.search}`,
        headers,
      });
    } catch {
      fail('ECONNRESET');
      return;
    }
    // SECURITY: a hostile upstream chooses these answers. 101 to a request that asked
    // for no upgrade: Node would emit only 'close' and the page would wait for its
    // timeout. Endless 1xx: each one resets the idle timer. Both are a network error.
    upstream.on('upgrade', () => fail('INVALID_RESPONSE'));
    let informational = 0;
    upstream.on('information', () => {
      if (++informational > MAX_INFORMATIONAL_ANSWERS) fail('INVALID_RESPONSE');
    });
    upstream.on('close', () => {
      // Closed with no answer relayed and no error said: still the page's network error.
      if (!res.headersSent) fail('EMPTY_RESPONSE');
    });
    upstream.on('response', (up) => {
      // SECURITY: what an upstream sends is hostile; nothing here may throw out of
      // an event handler (that would end the process and every tenant's request).
      try {
        const out: string[] = [];
        for (let i = 0; i + 1 < up.rawHeaders.length; i += 2) {
          const k = up.rawHeaders[i] as string;
          const v = up.rawHeaders[i + 1] as string;
          if (HOP_BY_HOP_HEADERS.has(k.toLowerCase())) continue;
          if (!TOKEN.test(k) || !WRITABLE_TEXT.test(v)) {
            fail('INVALID_RESPONSE');
            return;
          }
          out.push(k, v);
        }
        const status = up.statusCode ?? 0;
        if (!(status >= 200 && status <= 999)) {
          fail('INVALID_RESPONSE');
          return;
        }
        // A reason phrase with control characters is dropped; the status stands.
        const reason = WRITABLE_TEXT.test(up.statusMessage ?? '') ? up.statusMessage : undefined;
        res.writeHead(status, reason, out);
      } catch {
        fail('INVALID_RESPONSE');
        return;
      }
      // The client gone mid-body ends the upstream at once (not at the idle timeout), and back.
      pipeline(up, res, (err) => {
        if (err) {
          socket.destroy();
          res.destroy();
        }
      });
    });
    upstream.on('error', (e) => {
      // Node calls a close without any answer "socket hang up" (ECONNRESET);
      // Chromium, going direct, calls it ERR_EMPTY_RESPONSE. A real reset stays a reset.
      const code = e.message === 'socket hang up' ? 'EMPTY_RESPONSE' : ((e as { code?: string }).code ?? 'ECONNRESET');
      fail(code.startsWith('HPE_') ? 'INVALID_RESPONSE' : code);
    });
    res.once('close', () => {
      if (!res.writableFinished) socket.destroy();
    });
    pipeline(req, upstream, (err) => {
      if (err) socket.destroy();
    });
  }
}

/** host:port of a CONNECT request (authority-form); the port is required, as RFC 9110 says. */
export function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([0-9A-Za-z:.%]+)\]|([^\s:[\]/@]+)):(\d{1,5})$/.exec(authority);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (!(port >= 1 && port <= 65535)) return undefined;
  return { host: (m[1] ?? m[2] ?? '').toLowerCase(), port };
}

/** An error code as a header value: only token characters, whatever a connector threw. */
function safeToken(code: string): string {
  return TOKEN.test(code) ? code : 'UPSTREAM_ERROR';
}

/**
 * Listens on 127.0.0.1: on `port` when given, else on a free port of `range`
 * (from a random one on, so that instances sharing the range seldom try the
 * same), else on any free port.
 */
async function listenOnLoopback(
  server: NetServer,
  port: number,
  range?: { readonly first: number; readonly last: number },
): Promise<number> {
  if (port !== 0 || range === undefined) return await listenOnce(server, port);
  const size = range.last - range.first + 1;
  const start = randomInt(size);
  for (let i = 0; i < size; i++) {
    try {
      return await listenOnce(server, range.first + ((start + i) % size));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
    }
  }
  throw new Error(`no free port in EGRESS_PORTS (${range.first}-${range.last}): every one is in use`);
}

async function listenOnce(server: NetServer, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  return typeof addr === 'object' && addr ? addr.port : 0;
}
