// One browser context's identity at the egress guard. Each context is given a
// proxy port of its own (Puppeteer's per-context proxyServer); the guard knows
// the context by the port a connection arrives on, and the context is bound to
// the request that leased it. A port whose context is not leased yet (a spare)
// or is released carries nothing; Chromium's own requests, which use the
// browser-wide proxy port, carry nothing either.
import type { Duplex } from 'node:stream';
import type { Server, Socket } from 'node:net';
import {
  FAILURE_TTL_MS,
  MAX_FAILURES,
  MAX_LOOKUPS_IN_FLIGHT_PER_REQUEST,
  MAX_REFUSED_HOSTS,
  PROXY_FAILURE_STATS,
  type EgressStats,
  type ProxyFailureKind,
  type SessionState,
} from '../protocol/egress.js';
import { hostAllowed, type HostPattern } from '../protocol/host-patterns.js';

/** Told of every change of a session's counts and failures (the egress process passes them to the slot process). */
export interface SessionObserver {
  stats?(stats: EgressStats): void;
  failure?(host: string, port: number, error: string): void;
  /** A connection to host:port was refused for being outside the request's key's hosts (first time each). */
  refusedHost?(host: string, port: number): void;
}

export class EgressSession {
  readonly port: number;
  readonly #server: Server | undefined;
  readonly #sockets = new Set<Duplex>();
  /** Its upstream connections open now: their bytes are in stats() as they flow, and settled once each closes. */
  readonly #upstreams = new Set<Socket>();
  readonly #failures = new Map<string, { error: string; at: number }>();
  /** The distinct host:port refused for being outside the key's hosts, the first MAX_REFUSED_HOSTS. */
  readonly #refusedHosts = new Set<string>();
  /** Names that answered a public address in this request (the first MAX_FAILURES): a later refusal of one is rebinding. */
  readonly #publicNames = new Set<string>();
  readonly #stats: EgressStats = { connections: 0, refused: 0, bytesSent: 0, bytesReceived: 0 };
  readonly #onClose: () => void;
  #state: SessionState = 'spare';
  #requestId: string | undefined;
  #hosts: readonly HostPattern[] | undefined;
  #proxy: string | undefined;
  #closed: Promise<void> | undefined;
  #observer: SessionObserver | undefined;
  #checking = 0;
  readonly #waiting: (() => void)[] = [];

  /** Made by EgressGuard.openSession(); without a server, it is ended from the start (the guard is down). */
  constructor(server: Server | undefined, port: number, onClose: () => void) {
    this.#server = server;
    this.port = port;
    this.#onClose = onClose;
    if (!server) this.#state = 'ended';
  }

  /**
   * Runs one of this request's checks (a name lookup) when fewer than
   * MAX_LOOKUPS_IN_FLIGHT_PER_REQUEST are in flight; past it, it waits its turn.
   * SECURITY: one request's names whose servers never answer hold its own turns, not the others'.
   */
  async lookup<T>(check: () => Promise<T>): Promise<T> {
    if (this.#checking >= MAX_LOOKUPS_IN_FLIGHT_PER_REQUEST)
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#checking++;
    try {
      return await check();
    } finally {
      // The turn passes to the next waiter as it is (the count stays), or is given back.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#checking--;
    }
  }

  /** Checks of this request in flight now (tests). */
  get lookupsInFlight(): number {
    return this.#checking;
  }

  get state(): SessionState {
    return this.#state;
  }

  get requestId(): string | undefined {
    return this.#requestId;
  }

  /** SECURITY: whether the request's key may reach host:port (its policy's hosts; any host without one). */
  mayReach(host: string, port: number): boolean {
    return this.#hosts === undefined || hostAllowed(this.#hosts, host, port);
  }

  /** The upstream proxy (by name, in the guard's table) this request's traffic leaves through; undefined: direct. */
  get proxy(): string | undefined {
    return this.#proxy;
  }

  /**
   * From now on this context's traffic is the request's, judged and counted as
   * such, and leaves through `proxy` when one is named. A session already
   * ended (the guard closed) stays ended: the request's traffic is refused, as
   * it is when the guard is down.
   */
  bind(requestId: string, proxy?: string, hosts?: readonly HostPattern[]): void {
    if (this.#state === 'live') throw new Error('an egress session can be bound once');
    // SECURITY: a connection opened while the context was spare (by anyone: the
    // port is on loopback) is closed here, not carried into the request: only
    // connections made once the port is the request's are the request's.
    // Chromium opens its own after the lease, when the page starts to load.
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    this.#requestId = requestId;
    this.#proxy = proxy;
    this.#hosts = hosts;
    if (this.#state === 'spare') this.#state = 'live';
  }

  /**
   * The request is over: every open connection is cut and every new one
   * refused; what the cut ones moved until then is counted in, so stats() is
   * the request's final count from here on.
   */
  end(): void {
    this.#state = 'ended';
    for (const s of this.#sockets) s.destroy();
    for (const s of [...this.#upstreams]) this.#settle(s);
  }

  /** Ends the session (end()) and gives its final counts. */
  finish(): Promise<EgressStats> {
    this.end();
    return Promise.resolve(this.stats());
  }

  /**
   * Stops listening. Called once the context is gone: until then the port stays
   * held (refusing), so it cannot be given to another request's context while
   * this one might still use it.
   */
  close(): Promise<void> {
    this.end();
    const server = this.#server;
    this.#closed ??= new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())).finally(
      this.#onClose,
    );
    return this.#closed;
  }

  /** The counts so far: the bytes of the connections still open included, as they flow. */
  stats(): EgressStats {
    const stats = { ...this.#stats };
    for (const s of this.#upstreams) {
      stats.bytesSent += s.bytesWritten ?? 0;
      stats.bytesReceived += s.bytesRead;
    }
    return stats;
  }

  /** Tells `observer` of each change from now on (one observer). */
  observe(observer: SessionObserver): void {
    this.#observer = observer;
  }

  /** @internal The guard counts what it did for this session. */
  count(what: 'connections' | 'refused' | 'bytesSent' | 'bytesReceived', n = 1): void {
    this.#stats[what] += n;
    this.#observer?.stats?.(this.stats());
  }

  /** @internal A connection outside the key's hosts was refused: the first few are told once each. */
  refusedByKey(host: string, port: number): void {
    const key = `${host.toLowerCase()}:${port}`;
    // SECURITY: bounded, whatever the page tries: the failure details name the first few.
    if (this.#refusedHosts.has(key) || this.#refusedHosts.size >= MAX_REFUSED_HOSTS) return;
    this.#refusedHosts.add(key);
    this.#observer?.refusedHost?.(host.toLowerCase(), port);
  }

  /** @internal A name was allowed to a public address for this request. */
  answeredPublic(host: string): void {
    if (this.#publicNames.size < MAX_FAILURES) this.#publicNames.add(host.toLowerCase());
  }

  /** Whether a name answered a public address earlier in this request. */
  hasAnsweredPublic(host: string): boolean {
    return this.#publicNames.has(host.toLowerCase());
  }

  /** @internal A failure of this request's upstream proxy, counted by kind. */
  countProxyFailure(kind: ProxyFailureKind): void {
    const key = PROXY_FAILURE_STATS[kind];
    this.#stats[key] = (this.#stats[key] ?? 0) + 1;
    this.#observer?.stats?.(this.stats());
  }

  /**
   * @internal An upstream connection the guard opened for this request: counted,
   * its bytes counted as they flow, and cut when the session ends.
   */
  account(upstream: Socket): void {
    this.count('connections');
    this.track(upstream);
    this.#upstreams.add(upstream);
    upstream.once('close', () => this.#settle(upstream));
    // Opened as the session ended (a dial that was under way): cut, and counted now.
    if (this.#state === 'ended') upstream.destroy();
  }

  /** An upstream connection is cut or closed: its bytes go into the counts, once. */
  #settle(upstream: Socket): void {
    if (!this.#upstreams.delete(upstream)) return;
    upstream.destroy();
    this.#stats.bytesSent += upstream.bytesWritten ?? 0;
    this.#stats.bytesReceived += upstream.bytesRead;
    this.#observer?.stats?.(this.stats());
  }

  /** @internal A connection of this context; cut when the session ends. */
  track(s: Duplex): void {
    this.#sockets.add(s);
    s.once('close', () => this.#sockets.delete(s));
  }

  /** The net::ERR_… name of this request's last upstream failure for host:port, if recent. */
  recentFailure(host: string, port: number): string | undefined {
    const f = this.#failures.get(`${host.toLowerCase()}:${port}`);
    return f && performance.now() - f.at < FAILURE_TTL_MS ? f.error : undefined;
  }

  /** @internal */
  recordFailure(host: string, port: number, error: string): void {
    const key = `${host.toLowerCase()}:${port}`;
    this.#failures.delete(key);
    // Bounded: the oldest entry goes first (a Map iterates in insertion order).
    if (this.#failures.size >= MAX_FAILURES) this.#failures.delete(this.#failures.keys().next().value as string);
    this.#failures.set(key, { error, at: performance.now() });
    this.#observer?.failure?.(host, port, error);
  }
}
