// Every public error code, declared once: its HTTP status, its default message,
// what it means to a caller and what they should do (Markdown). The OpenAPI
// document (src/front/info/openapi.ts) is built from this table, and the error table of
// docs/api.md must say the same, row for row (test/unit/common/errors.test.ts checks both
// directions). A new code: add it here, then its row in docs/api.md and a CHANGELOG line.

export interface ErrorEntry {
  readonly status: number;
  /** The `error` text when nothing more precise is said. */
  readonly message: string;
  /** What the code means to a caller (Markdown, as in docs/api.md's error table). */
  readonly meaning: string;
  /** What the caller should do (Markdown). */
  readonly action: string;
}

export const ERRORS = {
  MISSING_REQUIRED_FIELD: {
    status: 400,
    message: 'Missing url',
    meaning:
      'No `url`; also an empty body, malformed JSON, or a body that is not a JSON object (a leading UTF-8 byte-order mark is skipped).',
    action: 'Send a JSON object with `url`.',
  },
  INVALID_URL_FORMAT: {
    status: 400,
    message: 'Invalid URL format',
    meaning: '`url` is not an absolute `http:`/`https:` URL with a host.',
    action: 'Fix the URL.',
  },
  INVALID_OUTPUT_FORMAT: {
    status: 400,
    message: 'Invalid output format. Supported: json, html',
    meaning: '`outputFormat` is not `json` or `html`.',
    action: 'Use one of those.',
  },
  CONFLICTING_SCRIPT_FIELDS: {
    status: 400,
    message: 'Send either script or scriptBase64, not both',
    meaning: 'Both `script` and `scriptBase64` were sent.',
    action: 'Send one.',
  },
  INVALID_SCRIPT_ENCODING: {
    status: 400,
    message: 'scriptBase64 is not valid Base64',
    meaning: '`scriptBase64` is not Base64, or not UTF-8 text once decoded.',
    action: 'Encode the UTF-8 source with Base64.',
  },
  INVALID_FIELD_TYPE: {
    status: 400,
    message: 'Invalid field type',
    meaning: '`script` or `scriptBase64` is not a string.',
    action: 'Send a string.',
  },
  INVALID_OPTIONS: {
    status: 400,
    message: 'Invalid options',
    meaning:
      '`options` is not an object, has an unknown key, or a value that is not allowed; `error` names the field (`Invalid options: options.viewport.width must be a number from 1 to 4096`).',
    action: 'Fix the field named (see "Request options").',
  },
  SCRAPING_FAILED: {
    status: 400,
    message: 'Script execution failed',
    meaning:
      'The script failed (syntax error, thrown error, missing element, timeout) or the page could not be loaded or is not allowed. `error` is `Script execution failed: <detail>`.',
    action:
      'Read the detail, and `phase`, `line`, `column`, `stack` and `pageCalls` in the body (see "When a script fails").',
  },
  MEMORY_LIMIT_EXCEEDED: {
    status: 400,
    message: 'Memory limit exceeded',
    meaning:
      'The script used more than `SCRIPT_MEMORY_MB`, or the page (its renderers, frames, popups, workers and storage) more than `PAGE_MEMORY_MB`; `error` says which.',
    action: 'Use less memory, or raise the limit.',
  },
  RESULT_TOO_LARGE: {
    status: 400,
    message: 'Result too large',
    meaning: "The result's JSON (without a script: the page's HTML or summary) is larger than `MAX_RESULT_BYTES`.",
    action: 'Return less.',
  },
  MISSING_API_KEY: {
    status: 401,
    message: 'API key is required',
    meaning: 'No `X-Gateway-Key`.',
    action: 'Send your key.',
  },
  INVALID_API_KEY: {
    status: 401,
    message: 'Invalid API key',
    meaning: 'The key is not valid, or more than one `X-Gateway-Key` header was sent.',
    action: 'Check the key; send it once.',
  },
  INVALID_GATEWAY_HOST: {
    status: 401,
    message: 'Invalid gateway host',
    meaning: '`GATEWAY_HOST` is set and `X-Gateway-Host` differs.',
    action: 'Call through the gateway.',
  },
  INVALID_METRICS_TOKEN: {
    status: 401,
    message: 'Invalid or missing metrics token',
    meaning: '`METRICS_TOKEN` is set and `GET /metrics` came without `Authorization: Bearer <token>`, or with another.',
    action: 'Send the token.',
  },
  NOT_FOUND: {
    status: 404,
    message: 'Not found',
    meaning: 'No such path.',
    action: 'Use `POST /api/scrape`.',
  },
  METHOD_NOT_ALLOWED: {
    status: 405,
    message: 'Method not allowed',
    meaning: 'Wrong method for the path (`Allow` says which).',
    action: 'Use the method `Allow` names.',
  },
  MALFORMED_REQUEST: {
    status: 400,
    message: 'Malformed HTTP request',
    meaning:
      'The request is not valid HTTP/1.1 (a bad request line or header, two `Content-Length`s, `Content-Length` with `Transfer-Encoding`, bad chunked framing, no `Host`); the connection is closed. Written before the request reaches the service, so without `X-Request-Id`.',
    action: 'Fix the client, or send through a standard HTTP library.',
  },
  HEADERS_TOO_LARGE: {
    status: 431,
    message: 'Request headers too large',
    meaning:
      "The request's headers (or a chunked body's trailers) are over 16 KiB; the connection is closed. Written before the request reaches the service, so without `X-Request-Id`.",
    action: 'Send fewer or shorter headers.',
  },
  REQUEST_TIMEOUT: {
    status: 408,
    message: 'Request not received in time',
    meaning:
      "The request's headers did not arrive within `HEADERS_TIMEOUT_MS`, or its body within `REQUEST_TIMEOUT_MS`; the connection is closed. Written before the request reaches the service, so without `X-Request-Id`.",
    action: 'Send the request at once, whole.',
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    message: 'Request body too large',
    meaning:
      'The body is larger than `MAX_BODY_BYTES`, or is sent in so many tiny chunks (or with so much chunk framing) that reading it would cost far more than its size.',
    action: 'Send a smaller script, with `Content-Length` or in chunks of 1 KiB or more.',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: 'Content-Type must be application/json',
    meaning:
      '`Content-Type` is not `application/json`, or `Content-Encoding` is not `identity` (the message names it).',
    action: "Add `-H 'Content-Type: application/json'`; send the body uncompressed.",
  },
  KEY_BLOCKED: {
    status: 403,
    message: 'Key blocked',
    meaning:
      'The key was blocked for what its scripts tried: past `SECURITY_THRESHOLD` points of security events (internal addresses, refused methods, slot processes ended) within `SECURITY_WINDOW_MS`. `error` is `Key blocked until <time>` (ISO 8601); nothing of the request ran. See Security, "Monitoring and blocking".',
    action:
      'Wait `Retry-After` seconds; stop the scripts that probe. The operator can end the block (`npm run key -- unblock --name NAME`).',
  },
  RATE_LIMIT_EXCEEDED: {
    status: 429,
    message: 'Rate limit exceeded',
    meaning:
      'Too many requests for the key in the window; or no slot free within `QUEUE_TIMEOUT_MS`; or the queue is full; or a wrong key from an address that sent more than `AUTH_FAILURE_LIMIT` wrong keys in the window.',
    action: 'Wait `Retry-After` seconds.',
  },
  INTERNAL_SERVER_ERROR: {
    status: 500,
    message: 'Internal server error',
    meaning:
      'Unexpected failure, e.g. Chromium died under the request (`the browser closed unexpectedly`; it is relaunched at once), or the slot process running the request stopped (`the script runner stopped`; a fresh one serves the next requests). If Chromium dies just as the page loads, the answer may instead be 400 `SCRAPING_FAILED` naming the navigation.',
    action: 'Retry after a few seconds.',
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    message: 'Service unavailable',
    meaning:
      'The service is shutting down (`Service unavailable: shutting down`), or not started yet (`Service unavailable: starting`), or its own preparation of a browser context for the request (emptying the clipboard, a context, its egress port, a Chromium launch, an isolate) failed, or took over 20 s, in every slot it could wait for within `QUEUE_TIMEOUT_MS` (`Service unavailable: no browser context could be prepared in time`, with `Retry-After`; nothing of the request ran). (A client that goes away gets no reply; it is logged as `CLIENT_CLOSED`, see Operations.)',
    action: 'Retry after `Retry-After` seconds when it is sent, else on another instance.',
  },
} as const satisfies Record<string, ErrorEntry>;

export type ErrorCode = keyof typeof ERRORS;

/** What a job was doing when it failed: its lease (context and isolate), the navigation, or the script. */
export type JobPhase = 'lease' | 'navigation' | 'script';
export const JOB_PHASES = ['lease', 'navigation', 'script'] as const satisfies readonly JobPhase[];

/**
 * The service's own work before a request, any of which failing or being late
 * is no failure of the caller's: the front tries another prepared slot within
 * the request's queue time, else answers 503 with Retry-After (docs/api.md).
 */
export const HOUSEKEEPING_CAUSES = [
  /** Chromium's clipboard could not be emptied in any context leased in time. */
  'clipboard',
  /** A context (or its egress session) could not be made. */
  'lease',
  /** The egress guard did not bind the context's port to the request. */
  'egress-bind',
  /** The egress process did not answer the request's URL check, or stopped before its page was reached. */
  'egress-check',
  /** The slot process stopped before the request's page was reached. */
  'slot-stopped',
  /** The slot's Chromium could not be launched (or relaunched). */
  'chromium-launch',
  /** The request's isolate could not be made. */
  'isolate',
  /** The slot showed a sign of an escape before the request (a process of it outside its tree): it is replaced. */
  'escape-signs',
] as const;
export type HousekeepingCause = (typeof HOUSEKEEPING_CAUSES)[number];

/** Why a request ended in 500, a closed set (the `cause` label of pagescript_internal_errors_total). */
export const INTERNAL_CAUSES = [
  /** Chromium died under the request. */
  'browser-gone',
  /** The request's page closed under it (not by the script). */
  'page-closed',
  /** The request's slot process stopped. */
  'runner-stopped',
  /** The egress process stopped under the request. */
  'egress-stopped',
  /** The egress process did not answer the URL check. */
  'egress-unavailable',
  /** Anything else: a defect to find (the log line carries the error). */
  'unexpected',
] as const;
export type InternalCause = (typeof INTERNAL_CAUSES)[number];

/** A failed request's error body lists at most this many of the script's last page calls. */
export const MAX_PAGE_CALLS = 20;
/** options.screenshotOnError: a screenshot larger than this (PNG bytes, before Base64) is left out. */
export const MAX_ERROR_SCREENSHOT_BYTES = 1_048_576;

/** One call the script made to the host (page.click, elementHandle.type...), as a failure reports it. */
export interface PageCall {
  readonly method: string;
  /** How long it ran, in milliseconds (so far, when it is still pending). */
  readonly durationMs: number;
  readonly outcome: 'ok' | 'error' | 'pending';
  /** The error it failed with ("TimeoutError: ..."), cut short. */
  readonly error?: string;
}

/**
 * Where and why a request failed, added to its error body (docs/api.md "When a
 * script fails"). Nothing here may name a host path or a host frame.
 */
export interface FailureDetails {
  /** What was running: loading the page (options, navigation, waitForSelector) or the script. */
  phase?: 'navigation' | 'script';
  /** The page's URL when it failed. */
  finalUrl?: string;
  /** In the caller's script: line 1 is the first line they sent (script or scriptBase64). */
  line?: number;
  column?: number;
  /** The error's stack, the caller's own frames only. */
  stack?: string;
  /** The script's last calls to the page, oldest first. */
  pageCalls?: readonly PageCall[];
  /** With options.screenshotOnError: a PNG of the page when it failed, Base64. */
  screenshot?: string;
  /** Why the asked-for screenshot is absent. */
  screenshotOmitted?: string;
  /** host:port the page tried to reach outside its key's hosts, refused by the egress guard (the first 16). */
  refusedHosts?: readonly string[];
}

/** Why a time limit ended a job: the slot's own navigation or script limit, or the front's deadline. */
export type JobTimeout = 'script' | 'navigation' | 'deadline';

/** What an ApiError is made with besides its code and message; every field is fixed once it is made. */
export interface ApiErrorOptions {
  readonly cause?: unknown;
  /** Extra response headers (e.g. Retry-After). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly logs?: readonly string[];
  readonly failure?: FailureDetails;
  readonly timeout?: JobTimeout;
  readonly housekeeping?: HousekeepingCause;
  readonly internal?: InternalCause;
}

/**
 * An error with a stable public code. The HTTP layer maps the code to a status. It is made whole and never
 * changed after: what the caller's body shows (logs, failure), and why it happened (timeout, housekeeping,
 * internal). What the request measured on the way travels beside it, in its JobOutcome's telemetry.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  /** Extra response headers (e.g. Retry-After). */
  readonly headers: Readonly<Record<string, string>>;
  /** console output of a script that failed, returned with the error so nothing is lost. */
  readonly logs?: readonly string[];
  /** Where and why a script or a navigation failed, for the error body. */
  readonly failure?: FailureDetails;
  /** Set when a time limit ended the job (counted in the metrics). */
  readonly timeout?: JobTimeout;
  /** 503: which step of the service's own work before the request failed (another slot may serve it). */
  readonly housekeeping?: HousekeepingCause;
  /** 500: why, for the log line and metrics only (never in the reply). */
  readonly internal?: InternalCause;

  constructor(
    readonly code: ErrorCode,
    message: string = ERRORS[code].message,
    options: ApiErrorOptions = {},
  ) {
    super(message, { cause: options.cause });
    this.status = ERRORS[code].status;
    this.headers = options.headers ?? {};
    if (options.logs !== undefined) this.logs = options.logs;
    if (options.failure !== undefined) this.failure = options.failure;
    if (options.timeout !== undefined) this.timeout = options.timeout;
    if (options.housekeeping !== undefined) this.housekeeping = options.housekeeping;
    if (options.internal !== undefined) this.internal = options.internal;
  }

  /** A new error of the same code and message, with `more` in place of what it had (this one is unchanged). */
  with(more: ApiErrorOptions): ApiError {
    const { cause, headers, logs, failure, timeout, housekeeping, internal } = this;
    const made = { cause, headers, logs, failure, timeout, housekeeping, internal };
    const e = new ApiError(this.code, this.message, { ...made, ...more });
    e.stack = this.stack;
    return e;
  }
}

/** The 503 message when the service's own work before a request failed in every slot tried in time. */
export const NOT_PREPARED = 'Service unavailable: no browser context could be prepared in time';

/** The service's own work before the request (`cause`) failed: 503, no failure of the caller's. */
export function notPrepared(cause: HousekeepingCause, err?: unknown, headers?: Record<string, string>): ApiError {
  return new ApiError('SERVICE_UNAVAILABLE', NOT_PREPARED, {
    cause: err,
    housekeeping: cause,
    ...(headers ? { headers } : {}),
  });
}

/** A 500 with its internal cause (never shown to the caller). */
export function internalFailure(internal: InternalCause, message?: string, cause?: unknown): ApiError {
  return new ApiError('INTERNAL_SERVER_ERROR', message, { cause, internal });
}

/** `Script execution failed: <detail>`: the message of every SCRAPING_FAILED. */
export function scrapingFailed(detail: string, cause?: unknown, options: ApiErrorOptions = {}): ApiError {
  return new ApiError('SCRAPING_FAILED', `Script execution failed: ${detail}`, { ...options, cause });
}
