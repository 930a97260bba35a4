// The HTTP edge under hostile clients, on the real server over raw sockets:
// clients that send nothing, trickle headers, stop half-way through a body,
// stop reading a reply, open too many connections or stream bodies nobody
// asked for; and honest outcomes for clients that go away. The edge's
// timeouts are short here (about a second); each test waits for the event,
// never for a time.
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { MAX_UNANSWERED_REQUESTS } from '../../../src/front/http/edge.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { httpRequest, parseResponse, rawConnect, type RawConnection } from '../../helpers/raw-client.js';
import { TEST_KEY, capturingLogger, startTestService, type TestService } from '../../helpers/service.js';
import { until, within } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const log = capturingLogger();
const MAX_BODY_BYTES = 1024 * 1024;
/** Larger than what the kernel's socket buffers take on loopback for a reader that reads nothing (~4 MB). */
const BIG_REPLY_CHARS = 12 * 1024 * 1024;
let svc: TestService;

before(async () => {
  await fixtures.start();
  svc = await startTestService(
    {
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      HEADERS_TIMEOUT_MS: '1000',
      REQUEST_TIMEOUT_MS: '1500',
      KEEP_ALIVE_TIMEOUT_MS: '1000',
      REPLY_STALL_TIMEOUT_MS: '1500',
      MAX_BODY_BYTES: String(MAX_BODY_BYTES),
      MAX_RESULT_BYTES: String(16 * 1024 * 1024),
      SCRIPT_MEMORY_MB: '256',
      SCRIPT_TIMEOUT_MS: '10000',
      AUTH_FAILURE_LIMIT: '3',
      METRICS_TOKEN: 'edge-metrics-token-0123',
    },
    {},
    log.logger,
  );
});
after(async () => {
  // svc is unset when its start failed: the fixture server must close anyway, or the file's process never ends.
  await svc?.close();
  await fixtures.close();
});

const open = (): Promise<RawConnection> => rawConnect(svc.service.port);
/** The server's side of the next connection accepted. */
const nextServerSocket = (): Promise<Socket> =>
  new Promise((resolve) => svc.service.server.once('connection', (s: Socket) => resolve(s)));
const keyed = (extra: Record<string, string> = {}): Record<string, string> => ({
  'X-Gateway-Key': TEST_KEY,
  'Content-Type': 'application/json',
  ...extra,
});
const scrapeBody = (script: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ url: fixtures.url('/example'), script, ...extra });
const metricsText = (): Promise<string> => svc.service.app.metrics.text();
const requestsWith = async (code: string): Promise<number> => {
  const line = (await metricsText()).split('\n').find((l) => l.startsWith(`pagescript_requests_total{code="${code}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
};

/** Sends all of request but its last four bytes, one every 50 ms, until the server closes the connection. */
async function trickleUntilClosed(c: RawConnection, request: string): Promise<void> {
  let sent = 0;
  const trickle = setInterval(() => {
    if (sent < request.length - 4) c.socket.write(request[sent++] ?? '');
  }, 50);
  try {
    await within(c.closed, 'the server to close the connection');
  } finally {
    clearInterval(trickle);
  }
}

function assert408(c: RawConnection): void {
  const r = parseResponse(c.received());
  assert.equal(r.status, 408, c.received().slice(0, 200));
  assert.equal(r.headers.connection, 'close');
  assert.deepEqual(JSON.parse(r.body), {
    error: 'Request not received in time',
    code: 'REQUEST_TIMEOUT',
    statusCode: 408,
  });
}

describe('timeouts', () => {
  test('a connection that sends nothing is closed at HEADERS_TIMEOUT_MS with 408 REQUEST_TIMEOUT', async () => {
    const c = await open();
    await within(c.closed, 'the server to close the connection');
    assert408(c);
  });

  test('headers trickled a byte at a time are cut off at HEADERS_TIMEOUT_MS', async () => {
    const c = await open();
    await trickleUntilClosed(c, httpRequest('GET', '/health', {}));
    assert408(c);
  });

  test('on a kept-alive connection, the next request trickled after a first one is cut off with 408 too', async () => {
    const c = await open();
    c.socket.write(httpRequest('GET', '/health', {}));
    await c.until(/"status":"ok".*\}$/s);
    await trickleUntilClosed(c, httpRequest('GET', '/health', {}));
    // The second reply starts where the first (a /health body with objects inside) ends.
    const second = c.received().slice(c.received().indexOf('HTTP/1.1 ', 1));
    assert.match(second, /^HTTP\/1\.1 408 /);
    assert.match(second, /"code":"REQUEST_TIMEOUT"/);
  });

  test('half a body: the request is cut off at REQUEST_TIMEOUT_MS with 408, logged at info as REQUEST_TIMEOUT, never a 500', async () => {
    const errorsBefore = await requestsWith('INTERNAL_SERVER_ERROR');
    const c = await open();
    const body = scrapeBody('return 1');
    c.socket.write(httpRequest('POST', '/api/scrape', keyed(), body).slice(0, -10));
    await within(c.closed, 'the server to close the connection');
    assert408(c);
    await until(
      () =>
        log.lines.some((l) => l.code === 'REQUEST_TIMEOUT' && l.msg === 'scrape failed: request not received in time'),
      'the request to be logged',
    );
    const line = log.lines.find((l) => l.code === 'REQUEST_TIMEOUT');
    assert.equal(line?.level, 30, 'info');
    assert.equal(line?.status, 408);
    assert.equal(await requestsWith('REQUEST_TIMEOUT'), 1);
    assert.equal(await requestsWith('INTERNAL_SERVER_ERROR'), errorsBefore);
  });

  test('an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT_MS', async () => {
    const c = await open();
    c.socket.write(httpRequest('GET', '/health', {}));
    await c.until(/"status":"ok".*\}$/s);
    assert.match(c.received(), /Keep-Alive: timeout=1/);
    // The server ends it (a FIN, not a reset), having answered the one request.
    const ended = new Promise<boolean>((resolve) => {
      c.socket.once('end', () => resolve(true));
      c.socket.once('close', () => resolve(false));
    });
    assert.equal(await ended, true);
    await within(c.closed, 'the server to close the connection');
    assert.equal(c.received().match(/HTTP\/1\.1 /g)?.length, 1);
  });

  test('a reader that stops reading a large reply is cut off after REPLY_STALL_TIMEOUT_MS, and the reply is dropped', async () => {
    const server = nextServerSocket();
    const c = await open();
    const serverSide = await server;
    c.socket.write(
      httpRequest(
        'POST',
        '/api/scrape',
        keyed(),
        scrapeBody(`return 'x'.repeat(${BIG_REPLY_CHARS})`, { outputFormat: 'html' }),
      ),
    );
    // Reads nothing from here on.
    c.socket.pause();
    await within(
      new Promise<void>((resolve) => serverSide.once('close', () => resolve())),
      'the server to cut the stalled reader off',
    );
    c.socket.resume();
    await within(c.closed, 'the server to close the connection');
    assert.match(c.received(), /^HTTP\/1\.1 200 /);
    assert.ok(
      c.receivedBytes() < BIG_REPLY_CHARS,
      `the reply was cut off: ${c.receivedBytes()} of ${BIG_REPLY_CHARS} bytes arrived`,
    );
  });

  test('a slow reader that keeps reading gets the whole large reply, though it takes longer than REPLY_STALL_TIMEOUT_MS', async () => {
    const c = await open();
    c.socket.write(
      httpRequest(
        'POST',
        '/api/scrape',
        keyed({ Connection: 'close' }),
        scrapeBody(`return 'y'.repeat(${BIG_REPLY_CHARS})`, { outputFormat: 'html' }),
      ),
    );
    // Reads about 1 MiB, then rests for 300 ms, over and over: at least 3.6 s in all, never 1.5 s without reading.
    let sinceRest = 0;
    const t0 = Date.now();
    c.socket.on('data', (b: Buffer) => {
      sinceRest += b.length;
      if (sinceRest >= 1024 * 1024) {
        sinceRest = 0;
        c.socket.pause();
        setTimeout(() => c.socket.resume(), 300);
      }
    });
    await within(c.closed, 'the server to close the connection');
    const r = parseResponse(c.received());
    assert.equal(r.status, 200);
    assert.equal(r.body.length, BIG_REPLY_CHARS);
    assert.ok(Date.now() - t0 > 1500, 'the reply took longer than REPLY_STALL_TIMEOUT_MS');
  });

  test('a script that runs longer than every edge timeout still gets its reply', async () => {
    const c = await open();
    c.socket.write(
      httpRequest(
        'POST',
        '/api/scrape',
        keyed(),
        scrapeBody('await new Promise((r) => setTimeout(r, 2500)); return await page.title()'),
      ),
    );
    await c.until(/\r\n\r\n\{.*\}$/s);
    const r = parseResponse(c.received());
    assert.equal(r.status, 200, r.body);
    assert.equal((JSON.parse(r.body) as { data: string }).data, 'Example Domain');
    c.socket.destroy();
  });
});

describe('early replies close the body', () => {
  /** Streams a chunked body as fast as the server takes it, until the connection closes. */
  function streamForever(c: RawConnection): void {
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const frame = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
    const pump = (): void => {
      while (!c.socket.destroyed && c.socket.write(frame));
      if (!c.socket.destroyed) c.socket.once('drain', pump);
    };
    pump();
  }

  test('a client without a key streaming an endless body gets 401 and is closed; at most MAX_BODY_BYTES is read from it', async () => {
    const server = nextServerSocket();
    const c = await open();
    const serverSide = await server;
    c.socket.write(
      'POST /api/scrape HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
    );
    streamForever(c);
    await within(c.closed, 'the server to close the connection');
    const r = parseResponse(c.received());
    assert.equal(r.status, 401);
    assert.equal(r.headers.connection, 'close');
    assert.equal((JSON.parse(r.body) as { code: string }).code, 'MISSING_API_KEY');
    assert.ok(serverSide.bytesRead <= MAX_BODY_BYTES, `read ${serverSide.bytesRead} bytes`);
  });

  test('an authenticated early reply (415) closes the connection too, without reading the body', async () => {
    const server = nextServerSocket();
    const c = await open();
    const serverSide = await server;
    c.socket.write(
      `POST /api/scrape HTTP/1.1\r\nHost: x\r\nX-Gateway-Key: ${TEST_KEY}\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    streamForever(c);
    await within(c.closed, 'the server to close the connection');
    const r = parseResponse(c.received());
    assert.equal(r.status, 415);
    assert.equal(r.headers.connection, 'close');
    assert.ok(serverSide.bytesRead <= MAX_BODY_BYTES, `read ${serverSide.bytesRead} bytes`);
  });

  test('a chunked body over MAX_BODY_BYTES gets its 413 and the connection is closed', async () => {
    const c = await open();
    c.socket.write(
      `POST /api/scrape HTTP/1.1\r\nHost: x\r\nX-Gateway-Key: ${TEST_KEY}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    streamForever(c);
    await within(c.closed, 'the server to close the connection');
    const r = parseResponse(c.received());
    assert.equal(r.status, 413, c.received().slice(0, 200));
    assert.equal(r.headers.connection, 'close');
    assert.equal((JSON.parse(r.body) as { code: string }).code, 'PAYLOAD_TOO_LARGE');
  });

  /** Sends request headers for a chunked body, then frames of frame() as fast as the server takes them, until it closes. */
  async function chunkedUntilClosed(frame: Buffer): Promise<{ c: RawConnection; serverBytesRead: number }> {
    const server = nextServerSocket();
    const c = await open();
    const serverSide = await server;
    c.socket.write(
      `POST /api/scrape HTTP/1.1\r\nHost: x\r\nX-Gateway-Key: ${TEST_KEY}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    const pump = (): void => {
      while (!c.socket.destroyed && c.socket.write(frame));
      if (!c.socket.destroyed) c.socket.once('drain', pump);
    };
    pump();
    await within(c.closed, 'the server to close the connection');
    return { c, serverBytesRead: serverSide.bytesRead };
  }

  test('a body sent as one-byte chunks is refused with 413 after a bounded number of pieces, not parsed piece by piece', async () => {
    // Each 1-byte piece costs the front an event and a buffer: a 1 MiB body this way once held ~500 MB for 13 s.
    const { c, serverBytesRead } = await chunkedUntilClosed(Buffer.from('1\r\n \r\n'.repeat(4096)));
    const r = parseResponse(c.received());
    assert.equal(r.status, 413, c.received().slice(0, 200));
    assert.equal(r.headers.connection, 'close');
    assert.equal((JSON.parse(r.body) as { code: string }).code, 'PAYLOAD_TOO_LARGE');
    assert.match((JSON.parse(r.body) as { error: string }).error, /too many pieces/);
    // Without the bound on pieces, the whole 1 MiB is read this way: over 6 MiB on the wire.
    // With it, the server stops after ~1,000 pieces; reads until the 413 is flushed and the
    // connection closed add a few 64 KiB reads.
    assert.ok(serverBytesRead <= 3 * MAX_BODY_BYTES, `read ${serverBytesRead} bytes`);
  });

  test('chunks that carry large chunk extensions are refused with 413 once the framing outweighs the body; a few MiB are read, not GBs', async () => {
    // Node allows 16 KiB of extensions per chunk: without a bound on the wire, one client had 1.2 GB read in 5 s.
    const ext = `;${'e'.repeat(8000)}=${'v'.repeat(8000)}`;
    const { c, serverBytesRead } = await chunkedUntilClosed(Buffer.from(`1${ext}\r\n \r\n`));
    const r = parseResponse(c.received());
    assert.equal(r.status, 413, c.received().slice(0, 200));
    assert.equal((JSON.parse(r.body) as { code: string }).code, 'PAYLOAD_TOO_LARGE');
    // Refused once 2 × MAX_BODY_BYTES + 64 KiB were read for it; reads until the 413 is
    // flushed and the connection closed add some (measured: up to ~0.6 MiB). Without the
    // bound, the server reads until REQUEST_TIMEOUT_MS: hundreds of MiB here.
    assert.ok(serverBytesRead <= 4 * MAX_BODY_BYTES, `read ${serverBytesRead} bytes`);
  });

  test('a body in ordinary chunks (1 KiB) close to MAX_BODY_BYTES is read whole and served', async () => {
    const body = scrapeBody(`return 7 // ${'p'.repeat(MAX_BODY_BYTES - 2048)}`);
    const frames: string[] = [];
    for (let i = 0; i < body.length; i += 1024) {
      const part = body.slice(i, i + 1024);
      frames.push(`${part.length.toString(16)}\r\n${part}\r\n`);
    }
    const c = await open();
    c.socket.write(
      `POST /api/scrape HTTP/1.1\r\nHost: x\r\nX-Gateway-Key: ${TEST_KEY}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${frames.join('')}0\r\n\r\n`,
    );
    await c.until(/\r\n\r\n\{.*\}$/s);
    const r = parseResponse(c.received());
    assert.equal(r.status, 200, r.body.slice(0, 200));
    assert.equal((JSON.parse(r.body) as { data: number }).data, 7);
    c.socket.destroy();
  });

  test('a reply after the whole body was read keeps the connection open for the next request', async () => {
    const c = await open();
    c.socket.write(httpRequest('POST', '/api/scrape', keyed(), '{}'));
    await c.until(/MISSING_REQUIRED_FIELD.*\}$/s);
    assert.doesNotMatch(c.received(), /Connection: close/i);
    c.socket.write(httpRequest('GET', '/health', {}));
    await c.until(/"status":"ok"/);
    c.socket.destroy();
  });
});

describe('honest outcomes', () => {
  test('a client that goes away mid-upload is logged at info as CLIENT_CLOSED (499), not a 500', async () => {
    const errorsBefore = await requestsWith('INTERNAL_SERVER_ERROR');
    const closedBefore = await requestsWith('CLIENT_CLOSED');
    const server = nextServerSocket();
    const c = await open();
    const serverSide = await server;
    const partial = httpRequest(
      'POST',
      '/api/scrape',
      keyed({ 'X-Request-Id': 'gone-mid-upload' }),
      scrapeBody('return 1'),
    ).slice(0, -10);
    c.socket.write(partial);
    // Once the server has read it all, the request is in the service's hands, its body unfinished.
    await until(() => serverSide.bytesRead >= partial.length, 'the upload to start');
    c.socket.destroy();
    await until(() => log.lines.some((l) => l.requestId === 'gone-mid-upload'), 'the request to be logged');
    const line = log.lines.find((l) => l.requestId === 'gone-mid-upload');
    assert.equal(line?.level, 30, 'info, not error');
    assert.equal(line?.code, 'CLIENT_CLOSED');
    assert.equal(line?.status, 499);
    assert.equal(await requestsWith('CLIENT_CLOSED'), closedBefore + 1);
    assert.equal(await requestsWith('INTERNAL_SERVER_ERROR'), errorsBefore);
  });

  test('a client that goes away while its script runs is logged at info as CLIENT_CLOSED, and its script is ended', async () => {
    const c = await open();
    c.socket.write(
      httpRequest(
        'POST',
        '/api/scrape',
        keyed({ 'X-Request-Id': 'gone-mid-script' }),
        scrapeBody('await new Promise((r) => setTimeout(r, 8000)); return 1'),
      ),
    );
    await until(() => svc.service.app.scheduler.running === 1, 'the script to run');
    c.socket.destroy();
    await until(() => log.lines.some((l) => l.requestId === 'gone-mid-script'), 'the request to be logged');
    const line = log.lines.find((l) => l.requestId === 'gone-mid-script');
    assert.equal(line?.level, 30);
    assert.equal(line?.code, 'CLIENT_CLOSED');
    await until(() => svc.service.app.scheduler.running === 0, 'the slot to be free');
  });

  test('an absolute-form request target (POST http://host/api/scrape) is routed like /api/scrape', async () => {
    const c = await open();
    c.socket.write(
      httpRequest('POST', `http://127.0.0.1:${svc.service.port}/api/scrape`, keyed(), scrapeBody('return 6 * 7')),
    );
    await c.until(/\r\n\r\n\{.*\}$/s);
    const r = parseResponse(c.received());
    assert.equal(r.status, 200, r.body);
    assert.equal((JSON.parse(r.body) as { data: number }).data, 42);
    c.socket.destroy();
  });

  test('a gzip-encoded body is 415 UNSUPPORTED_MEDIA_TYPE naming the encoding', async () => {
    const r = await svc.raw('POST', '/api/scrape', {
      body: gzipSync(scrapeBody('return 1')).toString('latin1'),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'x-gateway-key': TEST_KEY },
    });
    assert.equal(r.status, 415);
    assert.equal(r.body.code, 'UNSUPPORTED_MEDIA_TYPE');
    assert.match(String(r.body.error), /Content-Encoding "gzip" is not supported/);
  });

  test('a JSON body that starts with a byte-order mark is accepted', async () => {
    const r = await svc.raw('POST', '/api/scrape', {
      body: `\uFEFF${scrapeBody('return await page.title()')}`,
      headers: { 'content-type': 'application/json', 'x-gateway-key': TEST_KEY },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data, 'Example Domain');
  });

  /** Sends text on a new connection and returns the one reply, once the server has closed the connection. */
  async function onlyReply(text: string): Promise<ReturnType<typeof parseResponse>> {
    const c = await open();
    c.socket.write(text);
    await within(c.closed, 'the server to close the connection');
    return parseResponse(c.received());
  }

  function assertJsonError(r: ReturnType<typeof parseResponse>, status: number, code: string): void {
    assert.equal(r.status, status, JSON.stringify(r));
    assert.equal(r.headers.connection, 'close');
    assert.match(r.headers['content-type'] ?? '', /^application\/json/);
    const body = JSON.parse(r.body) as { code: string; statusCode: number; error: string };
    assert.equal(body.code, code);
    assert.equal(body.statusCode, status);
  }

  test('a smuggling attempt (Content-Length with Transfer-Encoding) is 400 MALFORMED_REQUEST as JSON, and the connection is closed', async () => {
    const r = await onlyReply(
      `POST /api/scrape HTTP/1.1\r\nHost: x\r\nX-Gateway-Key: ${TEST_KEY}\r\nContent-Type: application/json\r\n` +
        'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n',
    );
    assertJsonError(r, 400, 'MALFORMED_REQUEST');
  });

  test('two different Content-Length headers are 400 MALFORMED_REQUEST as JSON', async () => {
    const r = await onlyReply(
      `POST /api/scrape HTTP/1.1\r\nHost: x\r\nX-Gateway-Key: ${TEST_KEY}\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}`,
    );
    assertJsonError(r, 400, 'MALFORMED_REQUEST');
  });

  test('an HTTP/1.1 request without Host is 400 MALFORMED_REQUEST as JSON', async () => {
    const r = await onlyReply('GET /health HTTP/1.1\r\n\r\n');
    assertJsonError(r, 400, 'MALFORMED_REQUEST');
    assert.match(r.body, /Host/);
  });

  test('two Host headers are 400 MALFORMED_REQUEST as JSON', async () => {
    const r = await onlyReply('GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n');
    assertJsonError(r, 400, 'MALFORMED_REQUEST');
  });

  test('headers over 16 KiB are 431 HEADERS_TOO_LARGE as JSON', async () => {
    const r = await onlyReply(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20 * 1024)}\r\n\r\n`);
    assertJsonError(r, 431, 'HEADERS_TOO_LARGE');
  });

  test('an Expect other than 100-continue is ignored: the request is served', async () => {
    const c = await open();
    c.socket.write(httpRequest('POST', '/api/scrape', keyed({ Expect: 'something-else' }), scrapeBody('return 6 * 7')));
    await c.until(/\r\n\r\n\{.*\}$/s);
    const r = parseResponse(c.received());
    assert.equal(r.status, 200, r.body);
    assert.equal((JSON.parse(r.body) as { data: number }).data, 42);
    c.socket.destroy();
  });

  test('two X-Gateway-Key headers are a clear 401 and do not count as guesses', async () => {
    // AUTH_FAILURE_LIMIT is 3 here: five of these would otherwise end in 429.
    for (let i = 0; i < 5; i++) {
      const c = await open();
      c.socket.write(
        httpRequest(
          'POST',
          '/api/scrape',
          [
            ['X-Gateway-Key', TEST_KEY],
            ['X-Gateway-Key', 'ps_other_0123456789abcdef'],
            ['Content-Type', 'application/json'],
          ],
          scrapeBody('return 1'),
        ),
      );
      await c.until(/\r\n\r\n\{.*\}$/s);
      const r = parseResponse(c.received());
      assert.equal(r.status, 401);
      assert.deepEqual(JSON.parse(r.body), {
        error: 'Invalid API key: send exactly one X-Gateway-Key header',
        code: 'INVALID_API_KEY',
        statusCode: 401,
      });
      c.socket.destroy();
    }
    const wrong = await svc.post({ url: fixtures.url('/example') }, { 'x-gateway-key': 'ps_wrong_0123456789abcdef' });
    assert.equal(wrong.status, 401, 'the first real guess from this address is still a 401');
  });
});

describe('pipelining', () => {
  /** Requests the edge handed to the app (which names each reply at once) from the next connection accepted. */
  async function countedConnection(): Promise<{
    c: RawConnection;
    requests: () => number;
    serverClosed: Promise<void>;
  }> {
    const server = nextServerSocket();
    const c = await open();
    const serverSide = await server;
    let n = 0;
    // Runs after the edge's own listener: a request it handed on has its X-Request-Id set.
    const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
      if (req.socket === serverSide && res.getHeader('x-request-id') !== undefined) n++;
    };
    svc.service.server.on('request', onRequest);
    const serverClosed = new Promise<void>((resolve) =>
      serverSide.once('close', () => {
        svc.service.server.off('request', onRequest);
        resolve();
      }),
    );
    return { c, requests: () => n, serverClosed };
  }

  test('a client that pipelines a thousand requests and reads nothing is closed after MAX_UNANSWERED_REQUESTS, not served a thousand', async () => {
    const { c, requests, serverClosed } = await countedConnection();
    c.socket.pause();
    c.socket.write(httpRequest('GET', '/health', {}).repeat(1000));
    await within(serverClosed, 'the server to close the connection');
    assert.ok(requests() <= MAX_UNANSWERED_REQUESTS, `${requests()} requests reached the app`);
    c.socket.destroy();
  });

  test('a client that pipelines a few requests gets every reply, in order', async () => {
    const { c } = await countedConnection();
    const ids = Array.from({ length: 8 }, (_, i) => `pipelined-${i}`);
    c.socket.write(ids.map((id) => httpRequest('GET', '/health', { 'X-Request-Id': id })).join(''));
    await c.until(new RegExp(`${ids.at(-1) ?? ''}[^]*"status":"ok"[^]*\\}$`));
    const order = [...c.received().matchAll(/X-Request-Id: (pipelined-\d+)/g)].map((m) => m[1]);
    assert.deepEqual(order, ids);
    c.socket.destroy();
  });
});

describe('MAX_CONNECTIONS', () => {
  const openConnections = (own: TestService): Promise<number> =>
    new Promise((resolve, reject) => own.service.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));

  test('one address cannot take every connection: past MAX_CONNECTIONS_PER_ADDRESS its new ones are closed, and another address is served', async () => {
    const own = await startTestService({
      MAX_CONNECTIONS: '8',
      MAX_CONNECTIONS_PER_ADDRESS: '3',
      METRICS_TOKEN: 'addr-metrics-token-0123',
    });
    const conns: RawConnection[] = [];
    try {
      const count = (): Promise<number> => openConnections(own);
      await until(async () => (await count()) === 0, 'no connection open');
      // The hostile client, from 127.0.0.3, holds as many as it may and asks for more.
      for (let i = 0; i < 3; i++) conns.push(await rawConnect(own.service.port, '127.0.0.3'));
      const refused = await rawConnect(own.service.port, '127.0.0.3');
      await within(refused.closed, 'the server to close the connection over the per-address cap');
      assert.equal(refused.receivedBytes(), 0, 'closed without an answer');
      assert.match(await own.service.app.metrics.text(), /pagescript_connections_dropped_per_address_total 1\b/);
      // Another client, from another address, is served.
      const other = await rawConnect(own.service.port, '127.0.0.4');
      conns.push(other);
      other.socket.write(httpRequest('GET', '/health', {}));
      await other.until(/"status":"ok"/);
      // Once one of its connections closes, the first address may open another.
      conns.shift()?.socket.destroy();
      await until(async () => (await count()) === 3, 'a connection to close');
      const again = await rawConnect(own.service.port, '127.0.0.3');
      conns.push(again);
      again.socket.write(httpRequest('GET', '/health', {}));
      await again.until(/"status":"ok"/);
    } finally {
      for (const c of conns) c.socket.destroy();
      await own.close();
    }
  });

  test('behind balancers (TRUST_PROXY) the cap per address is not applied: every connection comes from a balancer', async () => {
    const own = await startTestService({ TRUST_PROXY: '1', MAX_CONNECTIONS_PER_ADDRESS: '1' });
    const conns: RawConnection[] = [];
    try {
      for (let i = 0; i < 2; i++) conns.push(await rawConnect(own.service.port));
      for (const c of conns) c.socket.write(httpRequest('GET', '/health', {}));
      for (const c of conns) await c.until(/"status":"ok"/);
    } finally {
      for (const c of conns) c.socket.destroy();
      await own.close();
    }
  });

  test('past MAX_CONNECTIONS new connections are closed at once; once one closes, the next is served', async () => {
    const own = await startTestService({
      MAX_CONNECTIONS: '3',
      // All from 127.0.0.1 here: the cap per address is not what this test is about.
      MAX_CONNECTIONS_PER_ADDRESS: '3',
      METRICS_TOKEN: 'cap-metrics-token-0123',
    });
    const conns: RawConnection[] = [];
    try {
      const count = (): Promise<number> => openConnections(own);
      // The test's own HTTP client may hold a keep-alive connection from start-up checks: wait for none.
      await until(async () => (await count()) === 0, 'no connection open');
      for (let i = 0; i < 3; i++) conns.push(await rawConnect(own.service.port));
      await until(async () => (await count()) === 3, 'three connections open');
      const refused = await rawConnect(own.service.port);
      await within(refused.closed, 'the server to close the connection over the cap');
      assert.equal(refused.receivedBytes(), 0, 'closed without an answer');
      assert.match(await own.service.app.metrics.text(), /pagescript_connections_dropped_total 1\b/);
      conns.shift()?.socket.destroy();
      await until(async () => (await count()) === 2, 'a connection to close');
      const next = await rawConnect(own.service.port);
      conns.push(next);
      next.socket.write(httpRequest('GET', '/health', {}));
      await next.until(/"status":"ok"/);
    } finally {
      for (const c of conns) c.socket.destroy();
      await own.close();
    }
  });
});

describe('REPLY_MEMORY_BYTES', () => {
  test("one key's slow readers cannot pin replies past REPLY_MEMORY_BYTES: its own oldest reply is cut, and another key's reply is served whole", async () => {
    const OTHER_KEY = 'other-key-0123456789abcdef';
    const own = await startTestService(
      {
        API_KEYS: `${TEST_KEY},${OTHER_KEY}`,
        EGRESS_ALLOWLIST: fixtures.allowEntry,
        MAX_RESULT_BYTES: String(16 * 1024 * 1024),
        // Room for one big reply and a half: the second is over it.
        REPLY_MEMORY_BYTES: String(20 * 1024 * 1024),
        // Long enough that nothing here is cut for stalling: only for memory.
        REPLY_STALL_TIMEOUT_MS: '600000',
        SCRIPT_MEMORY_MB: '256',
        SCRIPT_TIMEOUT_MS: '10000',
        METRICS_TOKEN: 'reply-metrics-token-0123',
      },
      {},
      log.logger,
    );
    const conns: RawConnection[] = [];
    try {
      /** A big reply for key, read until it has started, then left unread; resolves with the server's side. */
      const slowReply = async (key: string): Promise<{ c: RawConnection; serverClosed: Promise<void> }> => {
        const server = new Promise<Socket>((resolve) =>
          own.service.server.once('connection', (s: Socket) => resolve(s)),
        );
        const c = await rawConnect(own.service.port);
        conns.push(c);
        const serverSide = await server;
        const serverClosed = new Promise<void>((resolve) => serverSide.once('close', () => resolve()));
        c.socket.write(
          httpRequest(
            'POST',
            '/api/scrape',
            keyed({ 'X-Gateway-Key': key }),
            scrapeBody(`return 's'.repeat(${BIG_REPLY_CHARS})`, { outputFormat: 'html' }),
          ),
        );
        await c.until(/^HTTP\/1\.1 200 /);
        c.socket.pause();
        return { c, serverClosed };
      };
      const first = await slowReply(TEST_KEY);
      const second = await slowReply(TEST_KEY);
      await within(first.serverClosed, "the key's oldest reply to be cut off");
      assert.match(await own.service.app.metrics.text(), /pagescript_replies_cut_total\{reason="memory"\} 1\b/);

      // Another key asks for as much and reads it: the slow key's reply gives way, not this one.
      const reader = await rawConnect(own.service.port);
      conns.push(reader);
      reader.socket.write(
        httpRequest(
          'POST',
          '/api/scrape',
          keyed({ 'X-Gateway-Key': OTHER_KEY, Connection: 'close' }),
          scrapeBody(`return 'r'.repeat(${BIG_REPLY_CHARS})`, { outputFormat: 'html' }),
        ),
      );
      await within(reader.closed, 'the reply to be read whole');
      const r = parseResponse(reader.received());
      assert.equal(r.status, 200);
      assert.equal(r.body.length, BIG_REPLY_CHARS);
      await within(second.serverClosed, "the slow key's other reply to be cut off");
      assert.ok(
        log.lines.some((l) => l.code === 'REPLY_CUT' && l.reason === 'memory' && l.level === 30),
        'the cut is logged at info',
      );
    } finally {
      for (const c of conns) c.socket.destroy();
      await own.close();
    }
  });
});
