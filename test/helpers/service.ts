// Starts the real service (egress guard, Chromium, HTTP server) for a test file
// and gives a small client for POST /api/scrape.
import { request } from 'undici';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { startService, type Service, type ServiceOptions } from '../../src/service.js';

export const TEST_KEY = 'test-key-0123456789abcdef';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The parsed JSON body, when it is JSON. */
  body: Record<string, unknown>;
}

export interface TestService {
  readonly service: Service;
  readonly base: string;
  post(body: unknown, headers?: Record<string, string>): Promise<Reply>;
  raw(method: string, path: string, opts?: { body?: string; headers?: Record<string, string> }): Promise<Reply>;
  close(): Promise<void>;
}

export async function startTestService(env: Record<string, string> = {}, opts: ServiceOptions = {}): Promise<TestService> {
  const config = loadConfig({
    PORT: '0',
    API_KEYS: TEST_KEY,
    LOG_LEVEL: 'silent',
    PUPPETEER_EXECUTABLE_PATH: process.env.PUPPETEER_EXECUTABLE_PATH ?? '/usr/lib/chromium/chromium',
    SCRIPT_TIMEOUT_MS: '5000',
    NAVIGATION_TIMEOUT_MS: '5000',
    RATE_LIMIT: '100000',
    ...env,
  });
  const service = await startService(config, silentLogger(), opts);
  const base = `http://127.0.0.1:${service.port}`;

  async function raw(method: string, path: string, o: { body?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
    const r = await request(`${base}${path}`, {
      method: method as 'POST',
      headers: o.headers ?? {},
      ...(o.body === undefined ? {} : { body: o.body }),
    });
    const text = await r.body.text();
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // not JSON (html output)
    }
    return { status: r.statusCode, headers: r.headers, text, body };
  }

  return {
    service,
    base,
    raw,
    post: (body, headers = {}) =>
      raw('POST', '/api/scrape', {
        body: typeof body === 'string' ? body : JSON.stringify(body),
        headers: { 'content-type': 'application/json', 'x-gateway-key': TEST_KEY, 'x-gateway-host': 'localhost', ...headers },
      }),
    close: () => service.close(),
  };
}
