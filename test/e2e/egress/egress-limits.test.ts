// The egress guard's own limits end to end through Chromium: request headers
// at the documented maximum of the options reach the target whole, and a page
// that builds a larger head itself gets the guard's 431, not an empty response.
// Name lookups: a DNS server of the test's own on 127.0.0.1 (DNS_SERVERS) that
// never answers one zone. Every target and server is loopback.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { MAX_REQUEST_HEAD_BYTES } from '../../../src/protocol/egress.js';
import { MAX_COOKIE_CHARS, MAX_COOKIES, MAX_HEADER_CHARS, MAX_HEADERS } from '../../../src/protocol/request-options.js';
import { LoopbackDns } from '../../helpers/dns-server.js';
import { startTestService, type TestService } from '../../helpers/service.js';

/** A target that takes heads of any size the guard lets through, and records each. */
let target: Server;
let port = 0;
const heads: IncomingMessage[] = [];
let svc: TestService;

before(async () => {
  target = createServer({ maxHeaderSize: 4 * MAX_REQUEST_HEAD_BYTES }, (req, res) => {
    heads.push(req);
    res.writeHead(200, { 'content-type': 'text/html' });
    if (req.url === '/grow') {
      // 150 cookies of ~4 KiB (under Chromium's 180 a domain): ~600 KiB of Cookie header.
      res.end(`<title>grow</title><script>
        for (let i = 0; i < 150; i++) document.cookie = 'c' + i + '=' + 'v'.repeat(4000);
        fetch('/echo').then((r) => { document.title = r.status + ' ' + r.headers.get('x-pagescript-egress'); },
                            (e) => { document.title = 'network error'; });
      </script>`);
      return;
    }
    if (req.url === '/flood') {
      // Names under a zone whose server never answers: each lookup runs to its deadline.
      const imgs = Array.from({ length: 120 }, (_, i) => `<img src="http://n${i}.silent.test/x.png">`).join('');
      res.end(`<title>flood</title>${imgs}`);
      return;
    }
    res.end('<title>whole</title>');
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  port = (target.address() as { port: number }).port;
  svc = await startTestService({ EGRESS_ALLOWLIST: `127.0.0.1:${port}` });
});
after(async () => {
  await svc?.close();
  target.closeAllConnections();
  await new Promise<void>((r) => target.close(() => r()));
});

describe('request headers through the guard', () => {
  test('extraHTTPHeaders and cookies at their documented maximum reach the target whole through the guard', async () => {
    heads.length = 0;
    const extraHTTPHeaders: Record<string, string> = {};
    for (let i = 0; i < MAX_HEADERS; i++) extraHTTPHeaders[`X-Big-${i}`] = String(i % 10).repeat(MAX_HEADER_CHARS);
    const cookies = Array.from({ length: MAX_COOKIES }, (_, i) => {
      const name = `k${i}`;
      return { name, value: 'v'.repeat(MAX_COOKIE_CHARS - name.length) };
    });
    const r = await svc.post({
      url: `http://127.0.0.1:${port}/max`,
      script: 'return await page.title()',
      options: { extraHTTPHeaders, cookies },
    });
    assert.equal(r.status, 200, r.text.slice(0, 500));
    assert.equal(r.body.data, 'whole');
    const head = heads.find((h) => h.url === '/max');
    assert.ok(head, 'the target was reached');
    for (let i = 0; i < MAX_HEADERS; i++)
      assert.equal(head.headers[`x-big-${i}`], String(i % 10).repeat(MAX_HEADER_CHARS), `X-Big-${i}`);
    const sent = String(head.headers.cookie).split('; ');
    assert.equal(sent.length, MAX_COOKIES);
    for (const c of cookies) assert.ok(sent.includes(`${c.name}=${c.value}`), c.name);
  });

  test("a page that grows its own request head past the guard's limit gets 431 from the guard, not an empty response", async () => {
    heads.length = 0;
    const r = await svc.post({
      url: `http://127.0.0.1:${port}/grow`,
      script: `await page.waitForFunction('document.title !== "grow"'); return await page.title()`,
    });
    assert.equal(r.status, 200, r.text.slice(0, 500));
    assert.equal(r.body.data, '431 HEADERS_TOO_LARGE');
    assert.equal(heads.filter((h) => h.url === '/echo').length, 0, 'the oversized request never reached the target');
  });
});

describe('name lookups', () => {
  const dns = new LoopbackDns({ 'ok.fast.test': '127.0.0.1' }, 'silent.test');
  let named: TestService;
  before(async () => {
    await dns.start();
    named = await startTestService(
      {
        EGRESS_ALLOWLIST: `ok.fast.test:${port}`,
        DNS_SERVERS: `127.0.0.1:${dns.port}`,
        NAVIGATION_TIMEOUT_MS: '15000',
        SCRIPT_TIMEOUT_MS: '30000',
      },
      { egressSeam: { systemResolver: true, loopbackOnly: true } },
    );
  });
  after(async () => {
    await named?.close();
    dns.close();
  });

  test("one tenant flooding a zone whose DNS server never answers does not hold another tenant's lookups", async () => {
    let floodDone = false;
    const flood = named
      .post({ url: `http://ok.fast.test:${port}/flood`, script: 'return await page.title()' })
      .finally(() => (floodDone = true));
    // The flood's lookups are in flight at the silent server before the other tenant asks.
    await dns.silentAtLeast(4);
    const r = await named.post({ url: `http://ok.fast.test:${port}/`, script: 'return await page.title()' });
    assert.equal(r.status, 200, r.text.slice(0, 500));
    assert.equal(r.body.data, 'whole', 'an allow-listed name answered by DNS_SERVERS');
    assert.equal(floodDone, false, "the flood's lookups are still pending");
    const f = await flood;
    assert.equal(f.status, 400, f.text.slice(0, 500));
    assert.match(String(f.body.error), /timeout|timed out/i);
  });
});
