// Every public error code, declared once with its HTTP status and message.
// The README's error table mirrors this one; a test checks they agree.

export const ERRORS = {
  MISSING_REQUIRED_FIELD: { status: 400, message: 'Missing url' },
  INVALID_URL_FORMAT: { status: 400, message: 'Invalid URL format' },
  INVALID_OUTPUT_FORMAT: { status: 400, message: 'Invalid output format. Supported: json, html' },
  CONFLICTING_SCRIPT_FIELDS: { status: 400, message: 'Send either script or scriptBase64, not both' },
  INVALID_SCRIPT_ENCODING: { status: 400, message: 'scriptBase64 is not valid Base64' },
  INVALID_FIELD_TYPE: { status: 400, message: 'Invalid field type' },
  SCRAPING_FAILED: { status: 400, message: 'Script execution failed' },
  MEMORY_LIMIT_EXCEEDED: { status: 400, message: 'Memory limit exceeded' },
  RESULT_TOO_LARGE: { status: 400, message: 'Result too large' },
  MISSING_API_KEY: { status: 401, message: 'API key is required' },
  INVALID_API_KEY: { status: 401, message: 'Invalid API key' },
  INVALID_GATEWAY_HOST: { status: 401, message: 'Invalid gateway host' },
  INVALID_METRICS_TOKEN: { status: 401, message: 'Invalid or missing metrics token' },
  NOT_FOUND: { status: 404, message: 'Not found' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'Request body too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Content-Type must be application/json' },
  RATE_LIMIT_EXCEEDED: { status: 429, message: 'Rate limit exceeded' },
  INTERNAL_SERVER_ERROR: { status: 500, message: 'Internal server error' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'Service unavailable' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** An error with a stable public code. The HTTP layer maps the code to a status. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  /** Extra response headers (e.g. Retry-After). */
  readonly headers: Readonly<Record<string, string>>;
  /** console output of a script that failed, returned with the error so nothing is lost. */
  logs?: readonly string[];
  /** Set when a time limit ended the job (counted in the metrics). */
  timeout?: 'script' | 'navigation';
  /** What the request's browser context did through the egress guard, for the request's log line. */
  egress?: Readonly<Record<string, number>>;

  constructor(
    readonly code: ErrorCode,
    message: string = ERRORS[code].message,
    options: { cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(message, { cause: options.cause });
    this.status = ERRORS[code].status;
    this.headers = options.headers ?? {};
  }
}

/** `Script execution failed: <detail>` — the SPEC's message shape for SCRAPING_FAILED. */
export function scrapingFailed(detail: string, cause?: unknown): ApiError {
  return new ApiError('SCRAPING_FAILED', `Script execution failed: ${detail}`, { cause });
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
