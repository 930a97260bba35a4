// Starts the real service (egress guard, Chromium, HTTP server) for a test file
// and gives a small client for POST /api/scrape.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { request } from 'undici';
import { loadConfig } from '../../src/common/config.js';
import { createLogger, silentLogger, type Logger } from '../../src/common/log.js';
import { suiteChromiumEnv } from './guarded-host.js';
import { assertMatchesOpenApi } from './openapi.js';
import { until } from './wait.js';
import { startService, type Service, type ServiceOptions } from '../../src/front/service.js';

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

export async function startTestService(
  env: Record<string, string> = {},
  opts: ServiceOptions = {},
  logger: Logger = silentLogger(),
): Promise<TestService> {
  const config = loadConfig({
    PORT: '0',
    API_KEYS: TEST_KEY,
    LOG_LEVEL: 'silent',
    // The suite runs on the Chromium npm test chose (CHROMIUM=shell|full, or PUPPETEER_EXECUTABLE_PATH).
    ...suiteChromiumEnv(),
    SCRIPT_TIMEOUT_MS: '5000',
    NAVIGATION_TIMEOUT_MS: '5000',
    RATE_LIMIT: '100000',
    AUTH_FAILURE_LIMIT: '100000',
    // The attack suites probe internal addresses under one key on purpose: only test/e2e/front/key-blocking.test.ts blocks.
    SECURITY_BLOCKING: 'off',
    // EGRESS_KERNEL_LOCK=off in the environment runs the suite without the kernel lock (docs/development.md).
    ...(process.env.EGRESS_KERNEL_LOCK ? { EGRESS_KERNEL_LOCK: process.env.EGRESS_KERNEL_LOCK } : {}),
    ...env,
  });
  const service = await startService(config, logger, opts);
  const base = `http://127.0.0.1:${service.port}`;

  async function raw(
    method: string,
    path: string,
    o: { body?: string; headers?: Record<string, string> } = {},
  ): Promise<Reply> {
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
    const reply = { status: r.statusCode, headers: r.headers, text, body };
    // Every reply of the end-to-end tests is checked against the service's own OpenAPI document.
    assertMatchesOpenApi(method, path, reply);
    return reply;
  }

  return {
    service,
    base,
    raw,
    post: (body, headers = {}) =>
      raw('POST', '/api/scrape', {
        body: typeof body === 'string' ? body : JSON.stringify(body),
        headers: {
          'content-type': 'application/json',
          'x-gateway-key': TEST_KEY,
          'x-gateway-host': 'localhost',
          ...headers,
        },
      }),
    close: () => service.close(),
  };
}

/**
 * Starts the fixtures and a service that may reach them, for the whole test file
 * (before/after hooks), and returns a handle that works once they are up.
 * `opts` (the test seams) and `logger` are the service's, as for startTestService.
 */
export function serviceFor(
  fixtures: { start(): Promise<unknown>; close(): Promise<void>; readonly allowEntry: string },
  env: Record<string, string> | (() => Record<string, string>) = {},
  opts: ServiceOptions = {},
  logger?: Logger,
): TestService {
  let inner: TestService | undefined;
  before(async () => {
    await fixtures.start();
    // A function: settings that name what the fixtures' start made (a proxy's port).
    inner = await startTestService(
      {
        EGRESS_ALLOWLIST: fixtures.allowEntry,
        ...(typeof env === 'function' ? env() : env),
      },
      opts,
      logger,
    );
  });
  after(async () => {
    await inner?.close();
    await fixtures.close();
  });
  const get = (): TestService => {
    if (!inner) throw new Error('the test service is not started');
    return inner;
  };
  return {
    get service() {
      return get().service;
    },
    get base() {
      return get().base;
    },
    post: (body, headers) => get().post(body, headers),
    raw: (method, path, opts) => get().raw(method, path, opts),
    close: () => get().close(),
  };
}

/** A logger configured as the service's, whose lines the test can read. */
export function capturingLogger(): { logger: Logger; lines: Array<Record<string, unknown>>; text: () => string } {
  const raw: string[] = [];
  const logger = createLogger('info', { write: (line: string) => void raw.push(line) });
  return {
    logger,
    get lines() {
      return raw.map((l) => JSON.parse(l) as Record<string, unknown>);
    },
    text: () => raw.join(''),
  };
}

export interface TimedReply {
  status: number;
  body: Record<string, unknown>;
  ms: number;
}

/** POSTs a script against url and measures the wall time of the whole request. */
export async function timedRun(svc: TestService, url: string, script: string): Promise<TimedReply> {
  const t0 = Date.now();
  const r = await svc.post({ url, script });
  return { status: r.status, body: r.body, ms: Date.now() - t0 };
}

/** After a script hit a limit: the next request is served normally and /health is 200. */
export async function assertServesNormally(svc: TestService, url: string, title: string): Promise<void> {
  const r = await svc.post({ url, script: 'return await page.title()' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, title);
  assert.equal((await svc.raw('GET', '/health')).status, 200);
}

/**
 * Sends `body` once no slot is busy (an earlier test's job ends once its context
 * is closed, after its answer), and waits until it has a slot: that slot is this
 * request's, whichever the front chose.
 */
export async function inItsOwnSlot(svc: TestService, body: unknown): Promise<{ reply: Promise<Reply>; slot: number }> {
  const busy = (): boolean[] => svc.service.slots.busySlots;
  await until(() => !busy().includes(true), 'no slot to hold a job');
  const reply = svc.post(body);
  await until(() => busy().includes(true), 'the request to have its slot');
  return { reply, slot: busy().indexOf(true) };
}
