// The OpenAPI 3.1 document of the service, served at GET /openapi.json and
// rendered at GET /docs. Built from the error table and the running
// configuration, so its codes and limits are always the service's own.
import type { Config } from '../../common/config.js';
import { ERRORS, MAX_ERROR_SCREENSHOT_BYTES, MAX_PAGE_CALLS, type ErrorCode } from '../../common/errors.js';
import { MAX_REFUSED_HOSTS } from '../../protocol/egress.js';
import { requestOptionsSchema } from '../../protocol/request-options.js';
import { VERSION } from '../../common/version.js';

type Json = Record<string, unknown>;

function codesWithStatus(status: number, only?: readonly ErrorCode[]): ErrorCode[] {
  return (Object.keys(ERRORS) as ErrorCode[]).filter(
    (c) => ERRORS[c].status === status && (only === undefined || only.includes(c)),
  );
}

const int = (description: string): Json => ({ description, schema: { type: 'string', pattern: '^[0-9]+$' } });

const RATE_HEADERS: Json = {
  'RateLimit-Limit': int("The key's requests per window."),
  'RateLimit-Remaining': int('Requests left in the current window.'),
  'RateLimit-Reset': int('Seconds until the window ends.'),
};
/** What the request cost (docs/keys-and-limits.md "What a request cost"): on every reply after authentication, each when known. */
const USAGE_HEADERS: Json = {
  'X-Usage-Wall-Ms': int('Milliseconds from the request to the reply.'),
  'X-Usage-Queue-Ms': int('Milliseconds waiting for a slot.'),
  'X-Usage-Cpu-Ms': int("CPU milliseconds of the request's processes: its slot process and its Chromium."),
  'X-Usage-Page-Memory-Peak-MiB': {
    description:
      "The most the request's Chromium processes held above their state before it (read from /proc), in MiB.",
    schema: { type: 'number' },
  },
  'X-Usage-Isolate-Heap-Peak-MiB': {
    description: "The most the request's isolate held (V8's heap statistics, read by the host), in MiB.",
    schema: { type: 'number' },
  },
  'X-Usage-Bytes-Received': int("Bytes the request's page received through the egress guard."),
  'X-Usage-Bytes-Sent': int("Bytes the request's page sent through the egress guard."),
  'X-Usage-Connections': int("Connections the request's page opened through the egress guard."),
};

const REQUEST_ID_HEADER: Json = {
  'X-Request-Id': {
    description: 'The request id: the one sent, else a new one.',
    required: true,
    schema: { type: 'string' },
  },
};

/** A probe's answer: a small JSON object whose status is one of these. */
function probeResponse(description: string, statuses: readonly string[]): Json {
  return {
    description,
    headers: REQUEST_ID_HEADER,
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['status'],
          additionalProperties: false,
          properties: { status: { type: 'string', enum: [...statuses] } },
        },
      },
    },
  };
}

function errorResponse(status: number, only?: readonly ErrorCode[], headers: Json = {}): Json {
  const codes = codesWithStatus(status, only);
  return {
    description: codes.map((c) => `${c}: ${ERRORS[c].meaning}`).join(' '),
    headers: { ...REQUEST_ID_HEADER, ...headers },
    content: {
      'application/json': {
        schema: {
          allOf: [{ $ref: '#/components/schemas/Error' }],
          properties: { code: { enum: codes }, statusCode: { const: status } },
        },
      },
    },
  };
}

/** GET /playground and its two assets (PLAYGROUND=on, the default). */
function playgroundPaths(): Json {
  const get = (operationId: string, summary: string, type: string, extra: Json = {}): Json => ({
    get: {
      operationId,
      summary,
      security: [],
      responses: {
        '200': { description: type, headers: REQUEST_ID_HEADER, content: { [type]: { schema: { type: 'string' } } } },
        ...extra,
        '405': errorResponse(405, undefined, {
          Allow: { description: 'GET, HEAD', required: true, schema: { type: 'string' } },
        }),
      },
    },
  });
  const notModified = { '304': { description: 'Not modified (If-None-Match).', headers: REQUEST_ID_HEADER } };
  return {
    '/playground': get(
      'playground',
      'A page to write, run and share scripts (HTML; off with PLAYGROUND=off)',
      'text/html',
    ),
    '/playground/playground.js': get('playgroundScript', "The playground's script", 'text/javascript', notModified),
    '/playground/playground.css': get('playgroundStyle', "The playground's stylesheet", 'text/css', notModified),
  };
}

/** /health's memory fields shown to all (the budget); the others need the metrics token. */
const HEALTH_BUDGET = [
  'serviceMb',
  'plannedMb',
  'perRequestMb',
  'pageLimitMb',
  'scriptLimitMb',
  'slotHostLimitMb',
  'maxConcurrency',
] as const;

export function openApiDocument(config: Config): Json {
  const limits = {
    maxBodyBytes: config.maxBodyBytes,
    maxResultBytes: config.maxResultBytes,
    scriptTimeoutMs: config.scriptTimeoutMs,
    navigationTimeoutMs: config.navigationTimeoutMs,
    scriptMemoryMb: config.scriptMemoryMb,
    maxLogLines: config.maxLogLines,
    maxLogBytes: config.maxLogBytes,
    rateLimit: config.rateLimit,
    rateLimitWindowMs: config.rateLimitWindowMs,
    authFailureLimit: config.authFailureLimit,
    maxConcurrency: config.maxConcurrency,
    queueLimit: config.queueLimit,
    queueTimeoutMs: config.queueTimeoutMs,
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    keepAliveTimeoutMs: config.keepAliveTimeoutMs,
    replyStallTimeoutMs: config.replyStallTimeoutMs,
  };
  const retryAfter = { 'Retry-After': { ...int('Seconds to wait before trying again.'), required: true } };
  return {
    openapi: '3.1.0',
    info: {
      title: 'pagescript',
      version: VERSION,
      summary: 'Load a web page in headless Chromium, run your script against it, get its result.',
      description:
        'POST /api/scrape loads url in a fresh incognito browser context, runs the script (the body of an async function, with ' +
        '`page` (Puppeteer 24), `cheerio`, `targetUrl` and `console.log`) in a V8 isolate, and returns what it returns. ' +
        `Limits of this instance: request body ${limits.maxBodyBytes} bytes; result ${limits.maxResultBytes} bytes; ` +
        `script ${limits.scriptTimeoutMs} ms and ${limits.scriptMemoryMb} MiB; navigation ${limits.navigationTimeoutMs} ms; ` +
        `${limits.rateLimit} requests per key per ${limits.rateLimitWindowMs} ms unless the key has its own limit; ` +
        `${limits.maxConcurrency} scripts at once, ${limits.queueLimit} waiting for at most ${limits.queueTimeoutMs} ms. ` +
        'Errors are JSON {error, code, statusCode}: match on code. Any request may also get 400 MALFORMED_REQUEST, ' +
        '408 REQUEST_TIMEOUT or 431 HEADERS_TOO_LARGE, written before it reaches the service (no X-Request-Id).',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    'x-pagescript-limits': limits,
    servers: [{ url: '/' }],
    security: [{ gatewayKey: [] }],
    paths: {
      '/api/scrape': {
        post: {
          operationId: 'scrape',
          summary: 'Run a script against a page',
          parameters: [
            {
              name: 'X-Gateway-Host',
              in: 'header',
              required: false,
              description: 'Checked only when the service has GATEWAY_HOST set.',
              schema: { type: 'string' },
            },
            {
              name: 'X-Request-Id',
              in: 'header',
              required: false,
              description: 'Your id for the request (1–128 of A–Z a–z 0–9 _ . : -); echoed.',
              schema: { type: 'string' },
            },
          ],
          requestBody: {
            required: true,
            description: `At most ${limits.maxBodyBytes} bytes.`,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/ScrapeRequest' } } },
          },
          responses: {
            '200': {
              description: 'The script ran. JSON by default; with outputFormat "html", the string the script returned.',
              headers: {
                ...REQUEST_ID_HEADER,
                ...Object.fromEntries(
                  Object.entries(RATE_HEADERS).map(([k, v]) => [k, { ...(v as Json), required: true }]),
                ),
                'X-Queue-Time-Ms': {
                  ...int('Milliseconds spent waiting for a slot (not in executionTime).'),
                  required: true,
                },
                'Server-Timing': {
                  description: 'Where the time went: queue, lease, isolate, navigation, script, serialize (ms).',
                  required: true,
                  schema: { type: 'string' },
                },
                ...USAGE_HEADERS,
              },
              content: {
                'application/json': { schema: { $ref: '#/components/schemas/ScrapeSuccess' } },
                'text/html': { schema: { type: 'string' } },
              },
            },
            '400': errorResponse(400, undefined, {
              ...RATE_HEADERS,
              ...USAGE_HEADERS,
              'X-Request-Id': {
                description:
                  'The request id; absent on MALFORMED_REQUEST, written before the request reaches the service.',
                required: false,
                schema: { type: 'string' },
              },
            }),
            '401': errorResponse(401, ['MISSING_API_KEY', 'INVALID_API_KEY', 'INVALID_GATEWAY_HOST']),
            '403': errorResponse(403, undefined, { ...RATE_HEADERS, ...USAGE_HEADERS, ...retryAfter }),
            '405': errorResponse(405, undefined, {
              Allow: { description: 'POST', required: true, schema: { type: 'string' } },
            }),
            '408': {
              ...errorResponse(408),
              // Written at the edge, before the request reaches the service: no X-Request-Id.
              headers: {},
            },
            '413': errorResponse(413, undefined, { ...RATE_HEADERS, ...USAGE_HEADERS }),
            '431': {
              ...errorResponse(431),
              // Written at the edge, as 408 is.
              headers: {},
            },
            '415': errorResponse(415, undefined, { ...RATE_HEADERS, ...USAGE_HEADERS }),
            '429': errorResponse(429, undefined, { ...RATE_HEADERS, ...USAGE_HEADERS, ...retryAfter }),
            '500': errorResponse(500, undefined, { ...RATE_HEADERS, ...USAGE_HEADERS }),
            '503': errorResponse(503, undefined, {
              ...RATE_HEADERS,
              ...USAGE_HEADERS,
              'Retry-After': {
                ...int('Seconds to wait before trying again: sent when no browser context could be prepared in time.'),
                required: false,
              },
            }),
          },
        },
      },
      '/health': {
        get: {
          operationId: 'health',
          summary: 'Whether the service can serve',
          security: [],
          responses: {
            '200': {
              description: 'Ready (status ok, or degraded while Redis is away).',
              headers: REQUEST_ID_HEADER,
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Health' } } },
            },
            '503': {
              description: 'Not ready: starting, or the browser is being relaunched.',
              headers: REQUEST_ID_HEADER,
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Health' } } },
            },
            '405': errorResponse(405, undefined, {
              Allow: { description: 'GET, HEAD', required: true, schema: { type: 'string' } },
            }),
          },
        },
      },
      '/ready': {
        get: {
          operationId: 'ready',
          summary: 'Readiness: whether a balancer should send this instance requests',
          security: [],
          responses: {
            '200': probeResponse('Ready: the browser is up and the instance is not draining.', ['ready']),
            '503': probeResponse('Not ready: starting, the browser being relaunched, or draining.', [
              'starting',
              'draining',
            ]),
            '405': errorResponse(405),
          },
        },
      },
      '/live': {
        get: {
          operationId: 'live',
          summary: 'Liveness: the process answers (also while starting and draining)',
          security: [],
          responses: {
            '200': probeResponse('The process answers.', ['alive']),
            '405': errorResponse(405),
          },
        },
      },
      '/metrics': {
        get: {
          operationId: 'metrics',
          summary: 'Prometheus metrics',
          security: [{}, { metricsToken: [] }],
          responses: {
            '200': {
              description: 'Prometheus text format.',
              headers: REQUEST_ID_HEADER,
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
            '401': errorResponse(401, ['INVALID_METRICS_TOKEN']),
            '405': errorResponse(405),
          },
        },
      },
      '/openapi.json': {
        get: {
          operationId: 'openapi',
          summary: 'This document',
          security: [],
          responses: {
            '200': {
              description: 'OpenAPI 3.1.',
              headers: REQUEST_ID_HEADER,
              content: { 'application/json': { schema: { type: 'object' } } },
            },
            '405': errorResponse(405),
          },
        },
      },
      '/docs': {
        get: {
          operationId: 'docs',
          summary: 'This document for a person (HTML, works offline)',
          security: [],
          responses: {
            '200': {
              description: 'HTML.',
              headers: REQUEST_ID_HEADER,
              content: { 'text/html': { schema: { type: 'string' } } },
            },
            '405': errorResponse(405),
          },
        },
      },
      ...(config.playground ? playgroundPaths() : {}),
    },
    components: {
      securitySchemes: {
        gatewayKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Gateway-Key',
          description: 'An API key (API_KEYS or the key file).',
        },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, when the service has one.' },
      },
      responses: { NotFound: errorResponse(404) },
      schemas: {
        ScrapeRequest: {
          type: 'object',
          required: ['url'],
          properties: {
            url: {
              type: 'string',
              maxLength: 8192,
              description: 'An absolute http: or https: URL; loaded before the script runs.',
            },
            script: {
              type: ['string', 'null'],
              description: 'The script: the body of an async function. Empty or absent: only check that url loads.',
            },
            scriptBase64: {
              type: ['string', 'null'],
              description: 'The script, Base64-encoded UTF-8. Not together with script.',
            },
            outputFormat: { enum: ['json', 'html', null], default: 'json' },
            options: { $ref: '#/components/schemas/RequestOptions' },
          },
        },
        RequestOptions: requestOptionsSchema(),
        ScrapeSuccess: {
          type: 'object',
          required: ['message', 'executionTime', 'logs'],
          additionalProperties: false,
          properties: {
            message: { type: 'string' },
            data: {
              description: 'What the script returned, copied with JSON semantics; absent when it returned undefined.',
            },
            executionTime: {
              type: 'integer',
              minimum: 0,
              description: 'Milliseconds of navigation and script, without the queue.',
            },
            logs: {
              type: 'array',
              items: { type: 'string' },
              description: `console output, at most ${limits.maxLogLines} lines.`,
            },
          },
        },
        Error: {
          type: 'object',
          required: ['error', 'code', 'statusCode'],
          additionalProperties: false,
          properties: {
            error: { type: 'string', description: 'A message for a person.' },
            code: { $ref: '#/components/schemas/ErrorCode' },
            statusCode: { type: 'integer', description: 'The HTTP status, repeated.' },
            logs: { type: 'array', items: { type: 'string' }, description: "A failed script's console output." },
            phase: {
              enum: ['navigation', 'script'],
              description:
                'What was running when the script or the page failed: loading the page (options, navigation, waitForSelector) or the script.',
            },
            finalUrl: { type: 'string', description: "The page's URL when it failed." },
            line: {
              type: 'integer',
              minimum: 1,
              description:
                'Where the error is in the script as sent: line 1 is its first line (script or scriptBase64).',
            },
            column: { type: 'integer', minimum: 1 },
            stack: {
              type: 'string',
              description:
                "The error's stack: its message line, then the script's own frames (at script.js:line:column).",
            },
            pageCalls: {
              type: 'array',
              maxItems: MAX_PAGE_CALLS,
              description: `The script's last ${MAX_PAGE_CALLS} calls to the page, oldest first.`,
              items: {
                type: 'object',
                required: ['method', 'durationMs', 'outcome'],
                additionalProperties: false,
                properties: {
                  method: { type: 'string', description: 'page.click, elementHandle.type, ...' },
                  durationMs: { type: 'integer', minimum: 0, description: 'So far, for a pending call.' },
                  outcome: { enum: ['ok', 'error', 'pending'] },
                  error: { type: 'string' },
                },
              },
            },
            screenshot: {
              type: 'string',
              contentEncoding: 'base64',
              contentMediaType: 'image/png',
              description: `With options.screenshotOnError: the page when it failed (PNG, at most ${MAX_ERROR_SCREENSHOT_BYTES} bytes before Base64).`,
            },
            screenshotOmitted: { type: 'string', description: 'Why the screenshot asked for is absent.' },
            refusedHosts: {
              type: 'array',
              maxItems: MAX_REFUSED_HOSTS,
              items: { type: 'string' },
              description: `host:port the page tried to reach outside its key's hosts, refused by the egress guard (the first ${MAX_REFUSED_HOSTS}).`,
            },
          },
        },
        ErrorCode: {
          enum: Object.keys(ERRORS),
          'x-codes': Object.fromEntries(
            (Object.keys(ERRORS) as ErrorCode[]).map((c) => [
              c,
              {
                status: ERRORS[c].status,
                message: ERRORS[c].message,
                meaning: ERRORS[c].meaning,
                action: ERRORS[c].action,
              },
            ]),
          ),
        },
        Health: {
          type: 'object',
          required: [
            'status',
            'browser',
            'chromium',
            'kernelLock',
            'slotCgroups',
            'slotNonDumpable',
            'slotPrivateTmp',
            'slotUsers',
            'limits',
            'keys',
          ],
          description:
            'browserRestarts, browserRecycles, slotRestarts (and executorRestarts, its deprecated name), egress, egressRestarts, running and queued are given only with Authorization: Bearer <METRICS_TOKEN>.',
          properties: {
            status: { enum: ['ok', 'degraded', 'starting', 'draining'] },
            browser: { enum: ['ready', 'not ready'] },
            chromium: {
              enum: ['shell', 'full'],
              description: 'shell: chromium-headless-shell; full: the whole browser (setting CHROMIUM).',
            },
            browserRestarts: { type: 'integer', minimum: 0 },
            browserRecycles: { type: 'integer', minimum: 0 },
            slotRestarts: { type: 'integer', minimum: 0 },
            executorRestarts: {
              type: 'integer',
              minimum: 0,
              deprecated: true,
              description: 'Deprecated: slotRestarts, its new name; removed in the next release.',
            },
            egress: {
              enum: ['ready', 'not ready'],
              description:
                'The egress process (the guard all browser traffic goes through); not ready while it is replaced.',
            },
            egressRestarts: { type: 'integer', minimum: 0 },
            chromiumSandbox: { type: ['boolean', 'null'] },
            kernelLock: {
              enum: [
                'on',
                'off: not root',
                'off: EGRESS_KERNEL_LOCK=off',
                'off: no NET_ADMIN',
                'off: no NET_ADMIN over this network namespace',
              ],
              description:
                "on: the kernel refuses the slots' users every connection but to the egress guard's ports (EGRESS_KERNEL_LOCK, docs/network.md); in a container, off where the runtime gave no CAP_NET_ADMIN over the container's own network namespace (docs/container.md).",
            },
            slotCgroups: {
              type: 'string',
              pattern: '^(on|off: .+)$',
              description:
                "on: the kernel holds each slot's CPU weight, memory limit and tasks (SLOT_CGROUPS, docs/budgets.md); off: why not.",
            },
            slotNonDumpable: {
              type: 'string',
              pattern: '^(on|off: .+)$',
              description:
                "on: no process of a slot's user can read the memory or environment of the slot's processes, its Chromium's included, nor ptrace them (docs/security.md); off: why not.",
            },
            slotUsers: {
              oneOf: [
                { type: 'array', items: { type: 'string' } },
                { type: 'string', pattern: '^off: .+$' },
              ],
              description:
                "The user each request slot runs as, slot i's at index i, each its own (as root, on a host or in a container's own user namespace); off: why every slot shares the front's user.",
            },
            slotPrivateTmp: {
              type: 'string',
              pattern: '^(on|off: .+)$',
              description:
                'on: each slot has its own bounded /tmp, /var/tmp and /dev/shm, emptied after each request (docs/security.md); off: why not.',
            },
            running: { type: 'integer', minimum: 0 },
            queued: { type: 'integer', minimum: 0 },
            memory: {
              type: 'object',
              description:
                'MiB. The budget (SERVICE_MEMORY_MB, what every slot busy would use, what one request may add, the page and script limits, the ceiling of a slot process (its host side), MAX_CONCURRENCY) is shown to all; reservedMb, inUseMb and its parts only with Authorization: Bearer <METRICS_TOKEN>.',
              required: [...HEALTH_BUDGET],
              additionalProperties: false,
              properties: {
                ...Object.fromEntries(
                  [...HEALTH_BUDGET, 'reservedMb', 'inUseMb', 'frontMb', 'slotsMb', 'chromiumMb', 'pagesMb'].map(
                    (k) => [k, { type: 'integer', minimum: 0 }],
                  ),
                ),
                executorsMb: {
                  type: 'integer',
                  minimum: 0,
                  deprecated: true,
                  description: 'Deprecated: slotsMb, its new name; removed in the next release.',
                },
              },
            },
            limits: { enum: ['memory', 'redis', 'local-fallback'] },
            keys: {
              enum: ['ok', 'stale'],
              description: 'stale: the last change to the key file failed to load (status is then degraded).',
            },
          },
        },
      },
    },
  };
}
