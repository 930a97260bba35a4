// What the service counts, for GET /metrics in Prometheus text format. One
// registry per service (not prom-client's global one), so that two services in
// one process (the tests) count apart.
//
// The process's own figures (memory, CPU, event-loop lag, GC) come from
// prom-client's default collectors, which start an event-loop-delay histogram
// and a GC observer that prom-client gives no way to stop. They describe the
// process, not a service, so they are started once per process, in a registry
// of their own, and merged into each service's output: closing a service leaves
// nothing of its own running, and a process that starts many services (the
// tests) does not gain a histogram and an observer per service.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { PROXY_FAILURE_KINDS, PROXY_FAILURE_STATS } from '../protocol/egress.js';
import type { MemoryReport } from './memory-report.js';

/** Seconds; from a fast page (tens of ms) to the longest script limits. */
const BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** Read when /metrics is scraped. */
export interface MetricsSources {
  running(): number;
  queued(): number;
  /** Scripts this instance may run at once: MAX_CONCURRENCY as SERVICE_MEMORY_MB allows it. */
  slots(): number;
  contextsReady(): number;
  browserRestarts(): number;
  browserRecycles(): number;
  slotRestarts(): number;
  egressRestarts(): number;
  /** The key file in force is not the one on disk (its last change failed to load). */
  keyFileStale(): boolean;
  keyFileReloadFailures(): number;
  /** The memory budget and what is in use (src/front/memory-report.ts). */
  memory(): MemoryReport;
  /** Requests ended for PAGE_MEMORY_MB (or a renderer that died of memory). */
  pageMemoryKills(): number;
}

let processRegistry: Registry | undefined;

/** The registry of the process's own figures, made (and its collectors started) on first use. */
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: 'pagescript_' });
  }
  return processRegistry;
}

export class Metrics {
  readonly registry = new Registry();
  readonly #process: Registry;
  readonly requests = new Counter({
    name: 'pagescript_requests_total',
    help: 'Requests to POST /api/scrape by outcome: OK or the error code.',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  readonly queueWait = this.#histogram('pagescript_queue_wait_seconds', 'Time a request waited for a slot.');
  readonly navigation = this.#histogram('pagescript_navigation_seconds', 'Time loading the url before the script ran.');
  readonly script = this.#histogram('pagescript_script_seconds', 'Time the script ran.');
  readonly duration = this.#histogram('pagescript_request_duration_seconds', 'Time from the request to the reply.');
  readonly memoryKills = new Counter({
    name: 'pagescript_memory_limit_kills_total',
    help: 'Requests ended with MEMORY_LIMIT_EXCEEDED (SCRIPT_MEMORY_MB or PAGE_MEMORY_MB).',
    registers: [this.registry],
  });
  readonly slotPreparationCpu = new Counter({
    name: 'pagescript_slot_preparation_cpu_seconds_total',
    help: "CPU the slots spent after a request's answer closing its context and preparing the next (spare context, isolate, a relaunch): the service's, billed to no key.",
    registers: [this.registry],
  });
  readonly internalErrors = new Counter({
    name: 'pagescript_internal_errors_total',
    help: 'Requests answered 500 INTERNAL_SERVER_ERROR, by internal cause (a closed set, docs/operations.md).',
    labelNames: ['cause'] as const,
    registers: [this.registry],
  });
  readonly notPrepared = new Counter({
    name: 'pagescript_not_prepared_total',
    help: 'Requests answered 503 because no slot could prepare for them within their queue time, by the step that failed.',
    labelNames: ['cause'] as const,
    registers: [this.registry],
  });
  readonly timeouts = new Counter({
    name: 'pagescript_timeouts_total',
    help: 'Scripts or navigations ended by their time limit.',
    labelNames: ['phase'] as const,
    registers: [this.registry],
  });
  readonly connectionsDropped = new Counter({
    name: 'pagescript_connections_dropped_total',
    help: 'Connections closed on arrival because MAX_CONNECTIONS were open.',
    registers: [this.registry],
  });
  readonly connectionsDroppedPerAddress = new Counter({
    name: 'pagescript_connections_dropped_per_address_total',
    help: 'Connections closed on arrival because MAX_CONNECTIONS_PER_ADDRESS were open from their address.',
    registers: [this.registry],
  });
  readonly repliesCut = new Counter({
    name: 'pagescript_replies_cut_total',
    help: 'Replies cut off before their reader had them: stall (REPLY_STALL_TIMEOUT_MS) or memory (REPLY_MEMORY_BYTES).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly requestTimeouts = new Counter({
    name: 'pagescript_request_timeouts_total',
    help: 'Requests whose headers or body did not arrive within HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS (answered 408).',
    registers: [this.registry],
  });
  readonly egressRefusals = new Counter({
    name: 'pagescript_egress_refusals_total',
    help: 'Connections the egress guard refused (loopback, private, metadata, protected ports).',
    registers: [this.registry],
  });

  readonly proxyRequests = new Counter({
    name: 'pagescript_proxy_requests_total',
    help: 'Requests that left through an upstream proxy, by its name in PROXIES.',
    labelNames: ['proxy'] as const,
    registers: [this.registry],
  });
  readonly proxyFailures = new Counter({
    name: 'pagescript_proxy_failures_total',
    help: 'Connections an upstream proxy failed, by its name and kind: unreachable, auth (407 or SOCKS5 credentials refused), refused (the proxy refused the target), socks (another SOCKS5 error), protocol (a malformed answer).',
    labelNames: ['proxy', 'kind'] as const,
    registers: [this.registry],
  });
  readonly proxyBytes = new Counter({
    name: 'pagescript_proxy_bytes_total',
    help: 'Bytes through an upstream proxy, by its name and direction (sent: to the proxy, received: from it), counted when each request ends.',
    labelNames: ['proxy', 'direction'] as const,
    registers: [this.registry],
  });

  /**
   * A request's traffic through its proxy, from its egress stats. SECURITY: the
   * label is the name the front chose, never one from a slot process, and a count
   * that is not a whole number of at least zero is ignored (prom-client throws on
   * a negative one, and a slot process is not trusted).
   */
  readonly keyRequests = new Counter({
    name: 'pagescript_key_requests_total',
    help: 'Requests by key name (USAGE_METRICS_KEYS names at most; the rest as _other) and outcome.',
    labelNames: ['key', 'code'] as const,
    registers: [this.registry],
  });
  readonly keyCpu = new Counter({
    name: 'pagescript_key_cpu_seconds_total',
    help: "CPU time of each key's requests: their slot process and Chromium (docs/keys-and-limits.md, What a request cost).",
    labelNames: ['key'] as const,
    registers: [this.registry],
  });
  readonly keyBrowser = new Counter({
    name: 'pagescript_key_browser_seconds_total',
    help: "Time each key's requests held a slot and its browser (from the slot given to the reply).",
    labelNames: ['key'] as const,
    registers: [this.registry],
  });
  readonly keyBytes = new Counter({
    name: 'pagescript_key_bytes_total',
    help: "Bytes each key's pages received from and sent to the network through the egress guard.",
    labelNames: ['key', 'direction'] as const,
    registers: [this.registry],
  });
  readonly usageRecordsDropped = new Counter({
    name: 'pagescript_usage_records_dropped_total',
    help: 'Usage records dropped because the usage file was not written fast enough (docs/keys-and-limits.md).',
    registers: [this.registry],
  });
  readonly securityEvents = new Counter({
    name: 'pagescript_security_events_total',
    help: 'Security events of each key\'s requests, by class (docs/security.md "Monitoring and blocking").',
    labelNames: ['key', 'class'] as const,
    registers: [this.registry],
  });
  readonly keyBlocks = new Counter({
    name: 'pagescript_key_blocks_total',
    help: 'Keys blocked for their security events (403 KEY_BLOCKED until the block ends).',
    labelNames: ['key'] as const,
    registers: [this.registry],
  });
  readonly #labelledKeys = new Set<string>();
  #maxLabelledKeys = 0;

  /** The key's label: its name for the first maxLabelledKeys keys, '_other' past them (bounded series). */
  #keyLabel(keyName: string): string {
    if (!this.#labelledKeys.has(keyName) && this.#labelledKeys.size < this.#maxLabelledKeys)
      this.#labelledKeys.add(keyName);
    return this.#labelledKeys.has(keyName) ? keyName : '_other';
  }

  /** A request's security events by class (src/protocol/security.ts: a closed set), under its key's label. */
  countSecurityEvents(keyName: string, byClass: Partial<Record<string, number>>): void {
    const key = this.#keyLabel(keyName);
    for (const [cls, n] of Object.entries(byClass))
      if (n !== undefined && n > 0) this.securityEvents.inc({ key, class: cls }, n);
  }

  countKeyBlock(keyName: string): void {
    this.keyBlocks.inc({ key: this.#keyLabel(keyName) });
  }

  /** How many key names the per-key series carry (USAGE_METRICS_KEYS). */
  set maxLabelledKeys(n: number) {
    this.#maxLabelledKeys = n;
  }

  /**
   * Counts one request's usage under its key's name. SECURITY: the names are
   * the operator's (key file, env-N), and at most maxLabelledKeys of them get
   * series of their own, so /metrics stays bounded however many keys there are.
   */
  countKeyUsage(
    keyName: string,
    code: string,
    u: { cpuMs?: number; browserMs?: number; bytesReceived?: number; bytesSent?: number },
  ): void {
    if (this.#maxLabelledKeys === 0) return;
    const key = this.#keyLabel(keyName);
    this.keyRequests.inc({ key, code });
    const pos = (v: number | undefined): number => (v !== undefined && Number.isFinite(v) && v > 0 ? v : 0);
    if (pos(u.cpuMs) > 0) this.keyCpu.inc({ key }, pos(u.cpuMs) / 1000);
    if (pos(u.browserMs) > 0) this.keyBrowser.inc({ key }, pos(u.browserMs) / 1000);
    if (pos(u.bytesReceived) > 0) this.keyBytes.inc({ key, direction: 'received' }, pos(u.bytesReceived));
    if (pos(u.bytesSent) > 0) this.keyBytes.inc({ key, direction: 'sent' }, pos(u.bytesSent));
  }

  countProxyEgress(proxy: string, egress: Readonly<Record<string, unknown>> | undefined): void {
    if (egress === undefined) return;
    const count = (v: unknown): number => (Number.isSafeInteger(v) && (v as number) > 0 ? (v as number) : 0);
    for (const kind of PROXY_FAILURE_KINDS) {
      const n = count(egress[PROXY_FAILURE_STATS[kind]]);
      if (n > 0) this.proxyFailures.inc({ proxy, kind }, n);
    }
    const sent = count(egress.bytesSent);
    const received = count(egress.bytesReceived);
    if (sent > 0) this.proxyBytes.inc({ proxy, direction: 'sent' }, sent);
    if (received > 0) this.proxyBytes.inc({ proxy, direction: 'received' }, received);
  }

  constructor(sources: MetricsSources) {
    // The process's own: resident memory, V8 heap by space, event-loop lag, GC (see the top of the file).
    this.#process = processMetrics();
    const gauge = (name: string, help: string, read: () => number): void => {
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read());
        },
      });
    };
    gauge('pagescript_jobs_running', 'Scripts running now.', () => sources.running());
    gauge('pagescript_jobs_queued', 'Requests waiting for a slot now.', () => sources.queued());
    // With the two above, the autoscaling signal: (running + queued) / slots is how much of the fleet is asked for.
    gauge(
      'pagescript_slots',
      'Scripts this instance may run at once (MAX_CONCURRENCY as SERVICE_MEMORY_MB allows it).',
      () => sources.slots(),
    );
    gauge('pagescript_browser_contexts_ready', 'Fresh browser contexts made ahead of demand, ready now.', () =>
      sources.contextsReady(),
    );
    const MB = 2 ** 20;
    gauge('pagescript_memory_budget_bytes', 'SERVICE_MEMORY_MB: the memory the whole service may use.', () =>
      Math.round(sources.memory().serviceMb * MB),
    );
    gauge(
      'pagescript_memory_reserved_bytes',
      'What the budget holds now: the processes at rest and what each running request may use.',
      () => Math.round(sources.memory().reservedMb * MB),
    );
    new Gauge({
      name: 'pagescript_memory_in_use_bytes',
      help: 'Resident memory (anonymous + shared) now, by process: the front, the slot processes, every Chromium.',
      labelNames: ['process'] as const,
      registers: [this.registry],
      collect() {
        const m = sources.memory();
        this.set({ process: 'front' }, m.frontMb * MB);
        this.set({ process: 'slots' }, m.slotsMb * MB);
        // Deprecated: process="slots", its new name; kept one release (docs/operations.md).
        this.set({ process: 'executors' }, m.slotsMb * MB);
        this.set({ process: 'chromium' }, m.chromiumMb * MB);
      },
    });
    gauge(
      'pagescript_page_memory_bytes',
      "The running requests' page memory now, as counted against PAGE_MEMORY_MB.",
      () => Math.round(sources.memory().pagesMb * MB),
    );
    // Counters kept by the browser host, read when scraped.
    const counter = (name: string, help: string, read: () => number): void => {
      new Counter({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    };
    gauge(
      'pagescript_key_file_stale',
      '1 when the last change to the key file failed to load (see the log), else 0.',
      () => (sources.keyFileStale() ? 1 : 0),
    );
    counter('pagescript_key_file_reload_failures_total', 'Changes to the key file that failed to load.', () =>
      sources.keyFileReloadFailures(),
    );
    counter('pagescript_browser_restarts_total', 'Chromium relaunches after it died.', () => sources.browserRestarts());
    counter(
      'pagescript_page_memory_kills_total',
      'Requests whose pages were ended for PAGE_MEMORY_MB (or whose renderer died of memory).',
      () => sources.pageMemoryKills(),
    );
    counter(
      'pagescript_browser_recycles_total',
      'Chromium replacements after BROWSER_RECYCLE_CONTEXTS contexts, or after a heavy request left it backed up.',
      () => sources.browserRecycles(),
    );
    counter(
      'pagescript_slot_restarts_total',
      'Slot processes that stopped (crash, out of memory, killed) and were replaced.',
      () => sources.slotRestarts(),
    );
    counter(
      'pagescript_executor_restarts_total',
      'Deprecated: pagescript_slot_restarts_total, its new name; kept one release (docs/operations.md).',
      () => sources.slotRestarts(),
    );
    counter(
      'pagescript_egress_restarts_total',
      'Egress processes (the guard all browser traffic goes through) that stopped and were replaced.',
      () => sources.egressRestarts(),
    );
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  async text(): Promise<string> {
    const [own, proc] = await Promise.all([this.registry.metrics(), this.#process.metrics()]);
    return `${own}\n${proc}`;
  }

  #histogram(name: string, help: string): Histogram {
    return new Histogram({ name, help, buckets: BUCKETS_S, registers: [this.registry] });
  }
}
