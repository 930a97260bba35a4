// Experiment: which kind of request leaves 256 KiB V8 pages mapped in the service.
import { readFileSync } from 'node:fs';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../test/helpers/fixtures.js';
import { startTestService } from '../test/helpers/service.js';
const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
await fixtures.start();
const svc = await startTestService({
  EGRESS_ALLOWLIST: fixtures.allowEntry,
  SCRIPT_MEMORY_MB: '32',
  SCRIPT_TIMEOUT_MS: '1000',
  MAX_CONCURRENCY: '2',
});
const gc = (globalThis as { gc?: () => void }).gc!;
function mem(): string {
  let pages = 0,
    pagesRss = 0,
    size = 0,
    anon = false;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const h = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (h) {
      size = (parseInt(h[2]!, 16) - parseInt(h[1]!, 16)) / 1024;
      anon = !h[3];
      continue;
    }
    const r = /^Rss:\s+(\d+) kB/.exec(line);
    if (r && anon && size === 256) {
      pages++;
      pagesRss += Number(r[1]) / 1024;
    }
  }
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;
  const h = process.memoryUsage();
  return `rss ${rss.toFixed(0)} pages256K ${pages} (${pagesRss.toFixed(0)} MB) heapTotal ${(h.heapTotal / 2 ** 20).toFixed(0)} used ${(h.heapUsed / 2 ** 20).toFixed(0)} ext ${(h.external / 2 ** 20).toFixed(0)} ab ${(h.arrayBuffers / 2 ** 20).toFixed(0)}`;
}
const kinds: Record<string, string> = {
  success: 'return await page.title()',
  error: 'throw new Error("x")',
  timeout: 'while (true) {}',
  memory: 'const a = []; while (true) a.push(new Array(1e5).fill(1))',
  cheerio: 'const $ = cheerio.load(await page.content()); return $("p").length',
};
const which = (process.env.K ?? 'success').split(',');
const n = Number(process.env.N ?? 100);
for (let i = 0; i < 10; i++) await svc.post({ url: fixtures.url('/example'), script: kinds.success });
await new Promise((r) => setTimeout(r, 1000));
gc();
console.log('start ', mem());
for (const k of which) {
  for (let i = 0; i < n; i++)
    await Promise.all([
      svc.post({ url: fixtures.url('/example'), script: kinds[k] }),
      svc.post({ url: fixtures.url('/example'), script: kinds[k] }),
    ]);
  await new Promise((r) => setTimeout(r, 1000));
  console.log(`${k.padEnd(7)}`, mem());
  gc();
  await new Promise((r) => setTimeout(r, 2000));
  console.log(`  gc   `, mem());
}
(gc as unknown as (o: object) => void)({ type: 'major', execution: 'sync', flavor: 'last-resort' });
await new Promise((r) => setTimeout(r, 2000));
console.log('last-resort', mem());
await svc.close();
await fixtures.close();
gc();
await new Promise((r) => setTimeout(r, 2000));
console.log('closed', mem());
