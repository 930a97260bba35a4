// What a request is billed for its page's traffic (X-Usage-Bytes-Received and
// pagescript_key_bytes_total): every byte its page moved through the egress
// guard until its session ended, the connections and tunnels still open when
// the script returned included: the guard cuts them, then counts. A page that
// keeps a connection open must not get what it read on it for free. The counts
// are the egress process's, never what the slot reports with its answer: code
// that escaped into a slot could report none.
//
// The HTTPS fixture's certificate is a throw-away one (helpers/tls.ts), trusted
// by its key in the slots' Chromium through the test seam (trustedSpki).
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { after, before, describe, test } from 'node:test';
import { startTestService, type TestService } from '../../helpers/service.js';
import { testCertificate } from '../../helpers/tls.js';
import { until } from '../../helpers/wait.js';

/** What the page reads on the connection it leaves open. */
const STREAMED = 16 * 2 ** 20;
const CHUNK = Buffer.alloc(64 * 1024, 0x61);
/** The key's name in /metrics (the first key of API_KEYS). */
const KEY_NAME = 'env-1';

/**
 * Serves a page, and /stream: STREAMED bytes, then nothing more, the response
 * left open until its connection is cut. Counts the /stream connections open.
 */
function serve(req: IncomingMessage, res: ServerResponse, open: Set<object>): void {
  // Never answered: the page waits here until its connection is cut.
  if (req.url === '/held') {
    held.arrived();
    return;
  }
  if (req.url !== '/stream') {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<title>billed</title>');
    return;
  }
  open.add(res);
  res.once('close', () => open.delete(res));
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' });
  let sent = 0;
  const more = (): void => {
    while (sent < STREAMED) {
      sent += CHUNK.length;
      if (!res.write(CHUNK)) {
        res.once('drain', more);
        return;
      }
    }
  };
  more();
}

const openStreams = { http: new Set<object>(), https: new Set<object>() };
/** Called when a page's request for /held arrives. */
const held = { arrived: (): void => undefined };
let http: Server;
let https: Server;
let spki = '';
let svc: TestService;

const port = (s: Server): number => (s.address() as { port: number }).port;
const listen = (s: Server): Promise<void> => new Promise((r) => s.listen(0, '127.0.0.1', r));

before(async () => {
  const made = testCertificate('127.0.0.1', 'IP:127.0.0.1');
  spki = made.spki;
  http = createHttpServer((req, res) => serve(req, res, openStreams.http));
  https = createHttpsServer({ key: made.key, cert: made.cert }, (req, res) => serve(req, res, openStreams.https));
  await Promise.all([listen(http), listen(https)]);
  svc = await startTestService(
    {
      EGRESS_ALLOWLIST: `127.0.0.1:${port(http)},127.0.0.1:${port(https)}`,
      MAX_CONCURRENCY: '1',
      SCRIPT_TIMEOUT_MS: '30000',
      NAVIGATION_TIMEOUT_MS: '30000',
    },
    // faults: a slot sends what a test gives it, as one that code escaped into would.
    { egressSeam: { loopbackOnly: true, trustedSpki: [spki], faults: true } },
  );
});

after(async () => {
  await svc?.close();
  for (const s of [http, https]) {
    s?.closeAllConnections();
    await new Promise<void>((r) => (s ? s.close(() => r()) : r()));
  }
});

/** Reads STREAMED bytes of /stream in the page and returns, the response still open. */
const READ_AND_RETURN = `return await page.evaluate(async (size) => {
  const reader = (await fetch('/stream')).body.getReader();
  let n = 0;
  while (n < size) {
    const { value, done } = await reader.read();
    if (done) break;
    n += value.length;
  }
  return n;
}, ${STREAMED})`;

async function receivedMetric(): Promise<number> {
  const m = await svc.raw('GET', '/metrics');
  const line = new RegExp(`^pagescript_key_bytes_total\\{key="${KEY_NAME}",direction="received"\\} (\\S+)$`, 'm');
  return Number(line.exec(m.text)?.[1] ?? 0);
}

/** The request is billed at least what its page read on the connection it left open; that connection is cut. */
async function billedForOpenConnection(url: string, open: Set<object>): Promise<void> {
  const before = await receivedMetric();
  const r = await svc.post({ url, script: READ_AND_RETURN });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, STREAMED, 'the page read the whole stream');
  const billed = Number(r.headers['x-usage-bytes-received']);
  assert.ok(billed >= STREAMED, `billed ${billed} bytes received for a page that read ${STREAMED}`);
  const counted = (await receivedMetric()) - before;
  assert.ok(counted >= STREAMED, `pagescript_key_bytes_total counted ${counted} bytes received`);
  assert.equal(counted, billed, 'the metric counts what the reply bills');
  // The request is over: the connection its page left open is cut.
  await until(() => open.size === 0, 'the open connection to be cut');
}

describe('a page that keeps a connection open when its script returns', () => {
  test('over plain HTTP: billed every byte it read on it', async () => {
    await billedForOpenConnection(`http://127.0.0.1:${port(http)}/`, openStreams.http);
  });

  test('through an HTTPS tunnel (CONNECT): billed every byte it read on it', async () => {
    await billedForOpenConnection(`https://127.0.0.1:${port(https)}/`, openStreams.https);
  });
});

test('a slot that answers with a forged egress bill (none received): billed what the egress process counted', async () => {
  await until(() => svc.service.slots.readyPids.length === 1 && !svc.service.slots.busySlots[0], 'the slot', {
    timeoutMs: 60_000,
  });
  const before = await receivedMetric();
  const arrived = new Promise<void>((resolve) => (held.arrived = resolve));
  // The page reads the whole stream, then waits on /held: the egress process has counted what it read.
  const reply = svc.post({
    url: `http://127.0.0.1:${port(http)}/`,
    script: `${READ_AND_RETURN.replace(/^return /, '')}; return await page.evaluate(() => fetch('/held').then((r) => r.text()))`,
  });
  await arrived;
  const id = svc.service.slots.jobIds[0];
  assert.ok(id !== undefined);
  // Code in the slot answers the job itself, its report saying the page received nothing.
  svc.service.slots.fault(
    'send',
    {
      type: 'done',
      id,
      outcome: {
        json: '1',
        logs: [],
        executionTimeMs: 1,
        timings: {},
        egress: { bytesReceived: 0, bytesSent: 0, connections: 0 },
      },
    },
    0,
  );
  const r = await reply;
  assert.equal(r.status, 200, r.text);
  const billed = Number(r.headers['x-usage-bytes-received']);
  assert.ok(billed >= STREAMED, `X-Usage-Bytes-Received ${billed}: billed what the slot said, not what was counted`);
  const counted = (await receivedMetric()) - before;
  assert.equal(counted, billed, 'pagescript_key_bytes_total counts what the reply bills');
});
