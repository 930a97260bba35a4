// The egress guard: the only proxy Chromium is allowed to use. It serves plain
// HTTP requests (absolute-form) and CONNECT tunnels (HTTPS, WebSocket), asks the
// EgressChecker for each one, and connects to exactly the address it checked.
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../log.js';
import type { EgressChecker } from './checker.js';
import { background } from '../background.js';

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

export interface GuardLimits {
  readonly connectTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly totalTimeoutMs: number;
  readonly maxBytesPerConnection: number;
}

export const DEFAULT_GUARD_LIMITS: GuardLimits = {
  connectTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  totalTimeoutMs: 10 * 60_000,
  maxBytesPerConnection: 512 * 1024 * 1024,
};

/** Chromium's net error names for upstream failures, by Node error code. */
export const NET_ERRORS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'net::ERR_CONNECTION_REFUSED',
  ECONNRESET: 'net::ERR_CONNECTION_RESET',
  EMPTY_RESPONSE: 'net::ERR_EMPTY_RESPONSE',
  ETIMEDOUT: 'net::ERR_CONNECTION_TIMED_OUT',
  EHOSTUNREACH: 'net::ERR_ADDRESS_UNREACHABLE',
  ENETUNREACH: 'net::ERR_ADDRESS_UNREACHABLE',
  NAME_NOT_RESOLVED: 'net::ERR_NAME_NOT_RESOLVED',
  NOT_ALLOWED: 'net::ERR_ACCESS_DENIED',
};

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

export const REFUSED_HEADER = 'x-pagescript-egress';

export interface GuardEvents {
  /** A connection was refused by policy. */
  onRefused?(host: string, port: number, reason: string): void;
}

export class EgressGuard {
  readonly #server: Server;
  readonly #checker: EgressChecker;
  readonly #connect: Connector;
  readonly #limits: GuardLimits;
  readonly #log: Logger;
  readonly #events: GuardEvents;
  readonly #sockets = new Set<Duplex>();
  /** Recent upstream failures by "host:port", so a script sees net::ERR_… instead of a tunnel error. */
  readonly #failures = new Map<string, { error: string; at: number }>();
  #port = 0;

  constructor(opts: {
    checker: EgressChecker;
    connector?: Connector;
    limits?: Partial<GuardLimits>;
    logger: Logger;
    events?: GuardEvents;
  }) {
    this.#checker = opts.checker;
    this.#connect = opts.connector ?? netConnector;
    this.#limits = { ...DEFAULT_GUARD_LIMITS, ...opts.limits };
    this.#log = opts.logger;
    this.#events = opts.events ?? {};
    this.#server = createServer({ keepAlive: true }, (req, res) =>
      background(this.#onRequest(req, res), 'egress request', this.#log),
    );
    this.#server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      background(this.#onConnect(req, socket, head), 'egress tunnel', this.#log),
    );
    this.#server.on('connection', (s: Socket) => {
      this.#sockets.add(s);
      s.once('close', () => this.#sockets.delete(s));
    });
    // Requests with Upgrade (not CONNECT) are not proxied: Chromium tunnels WebSockets with CONNECT.
    this.#server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => socket.destroy());
  }

  get port(): number {
    return this.#port;
  }

  /** Listens on loopback only. */
  async listen(port = 0): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, '127.0.0.1', () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    const addr = this.#server.address();
    this.#port = typeof addr === 'object' && addr ? addr.port : 0;
    return this.#port;
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** The net::ERR_… name of the last upstream failure for host:port within the last minute. */
  recentFailure(host: string, port: number): string | undefined {
    const f = this.#failures.get(`${host.toLowerCase()}:${port}`);
    return f && Date.now() - f.at < 60_000 ? f.error : undefined;
  }

  #recordFailure(host: string, port: number, code: string): void {
    if (this.#failures.size > 1000) this.#failures.clear();
    this.#failures.set(`${host.toLowerCase()}:${port}`, {
      error: NET_ERRORS[code] ?? 'net::ERR_CONNECTION_FAILED',
      at: Date.now(),
    });
  }

  #refuse(host: string, port: number, reason: string): void {
    this.#log.warn({ host, port, reason }, 'egress refused');
    this.#events.onRefused?.(host, port, reason);
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
    let host: string;
    let port: number;
    try {
      const u = new URL(`http://${req.url ?? ''}`);
      host = u.hostname;
      port = Number(u.port || 443);
    } catch {
      client.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const decision = await this.#checker.check(host, port);
    if (!decision.ok) {
      if (decision.code === 'NOT_ALLOWED') this.#refuse(host, port, decision.reason);
      this.#recordFailure(host, port, decision.code);
      client.end(`HTTP/1.1 403 Forbidden\r\n${REFUSED_HEADER}: ${decision.code}\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    let upstream: Socket;
    try {
      upstream = await this.#connect(
        { host, address: decision.address, family: decision.family, port },
        this.#limits.connectTimeoutMs,
      );
    } catch (e) {
      const code = (e as { code?: string }).code ?? 'ECONNREFUSED';
      this.#recordFailure(host, port, code);
      client.end(`HTTP/1.1 502 Bad Gateway\r\n${REFUSED_HEADER}: ${code}\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    if (client.destroyed) {
      upstream.destroy();
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
    const decision = await this.#checker.check(host, port);
    if (!decision.ok) {
      this.#recordFailure(host, port, decision.code);
      if (decision.code === 'NAME_NOT_RESOLVED') {
        req.socket.destroy();
        return;
      }
      // A refusal by policy is a readable answer, so a script can see why.
      this.#refuse(host, port, decision.reason);
      res
        .writeHead(403, { 'content-type': 'text/plain; charset=utf-8', [REFUSED_HEADER]: decision.code })
        .end(`pagescript egress guard: ${decision.reason}\n`);
      return;
    }
    let socket: Socket;
    try {
      socket = await this.#connect(
        { host, address: decision.address, family: decision.family, port },
        this.#limits.connectTimeoutMs,
      );
    } catch (e) {
      this.#recordFailure(host, port, (e as { code?: string }).code ?? 'ECONNREFUSED');
      // An upstream that cannot be reached is a network error for the page, as without a proxy.
      req.socket.destroy();
      return;
    }
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v !== undefined && !HOP_BY_HOP.has(k)) headers[k] = v;
    }
    headers.host = target.host;
    headers.connection = 'close';
    const upstream = httpRequest({
      createConnection: () => socket,
      method: req.method,
      path: `${target.pathname}${target.search}`,
      headers,
    });
    this.#boundUpstream(socket);
    upstream.on('response', (up) => {
      const out: string[] = [];
      for (let i = 0; i + 1 < up.rawHeaders.length; i += 2) {
        const k = up.rawHeaders[i] as string;
        if (!HOP_BY_HOP.has(k.toLowerCase())) out.push(k, up.rawHeaders[i + 1] as string);
      }
      res.writeHead(up.statusCode ?? 502, up.statusMessage, out);
      up.pipe(res);
    });
    upstream.on('error', (e) => {
      // Node calls a close without any answer "socket hang up" (ECONNRESET);
      // Chromium, going direct, calls it ERR_EMPTY_RESPONSE. A real reset stays a reset.
      const code = e.message === 'socket hang up' ? 'EMPTY_RESPONSE' : ((e as { code?: string }).code ?? 'ECONNRESET');
      this.#recordFailure(host, port, code);
      if (!res.headersSent) req.socket.destroy();
      else res.destroy();
    });
    req.pipe(upstream);
  }
}
