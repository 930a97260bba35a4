// npm run bench -- --real-pages [--rounds N] [--chromium shell|full] [out.json]
//
// What `options.blockResourceTypes: ['image', 'font', 'media']` changes on real
// pages (issue 18): every saved page of test/fixtures/real-pages goes through the
// service with and without the option, one request at a time, the arms
// interleaved in every round (their order rotated) so that the machine's drift
// falls on all of them alike. Two ways of serving the pages:
// - `csp`: as the tests serve them (OFFLINE_CSP): the page alone, every asset
//   refused by the page's CSP before it is requested, so there is nothing left
//   for the option to block;
// - `assets`: every URL of the page points at this fixture, and the CSP lets
//   images, fonts, media and stylesheets (not scripts, not frames) come from it,
//   so each is requested and answered on loopback: what the option saves when a
//   page's assets can be fetched. The bodies are stand-ins (see ASSETS): images
//   are a 160×120 PNG of noise, a stylesheet declares two web fonts for the body
//   text, fonts are TrueType files of ~110 KB, media 64 KiB that does not decode.
// Reported per page and overall: p50 and p95 of the request as the client sees
// it and of its navigation (Server-Timing), CPU per request of the service's
// Node and its Chromium, the assets each request fetched, and the ratios of the
// blocked arm to the plain one. See docs/performance.md.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';
import type { ChromiumMode } from '../../src/common/config.js';

/** The saved pages: data the tests serve too (test/helpers/fixtures.ts), read here as files. */
const REAL_PAGES_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test', 'fixtures', 'real-pages');
/** The CSP the tests serve them with (test/fixtures/real-pages/README.md): the page alone. */
const OFFLINE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

function realPageNames(): string[] {
  return readdirSync(REAL_PAGES_DIR)
    .filter((f) => f.endsWith('.html'))
    .sort();
}

export interface RealPagesDeps {
  readonly mode: ChromiumMode;
  startService(env: Record<string, string>): Promise<{ base: string; child: { pid?: number }; stop(): Promise<void> }>;
  call(
    base: string,
    body: unknown,
  ): Promise<{ ms: number; status: number; timing: Record<string, number>; error?: string }>;
  /** CPU used so far by the service's Node processes (front, slot processes) and by its Chromium processes, ms. */
  cpu(servicePid: number): { node: number; chromium: number };
}

export const BLOCKED = ['image', 'font', 'media'] as const;
/** Between two requests, not timed (the same as the main bench's): the service prepares its next context. */
const THINK_MS = 300;
const DEFAULT_ROUNDS = 6;

/**
 * A representative extraction: the page's HTML as Chromium has it, read with
 * cheerio, a few counts and the text's length, and the title from the page.
 */
export const EXTRACT = `const $ = cheerio.load(await page.content());
return {
  title: await page.title(),
  headings: $('h1, h2, h3').map((i, e) => $(e).text().trim()).get().slice(0, 10),
  links: $('a[href]').length,
  paragraphs: $('p').length,
  images: $('img').length,
  textLength: $('body').text().replace(/\\s+/g, ' ').trim().length,
}`;

// ------------------------------------------------------------------ the pages and their assets
/** A PNG of w×h pixels of noise (it does not compress: its decoding costs what a photo's would). */
function noisePng(w: number, h: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (b: Buffer): number => {
    let c = 0xffffffff;
    for (const x of b) c = (crcTable[(c ^ x) & 0xff] as number) ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer): Buffer => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const c = Buffer.alloc(4);
    c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const raw = Buffer.alloc((w * 3 + 1) * h);
  let seed = 0x9e3779b9;
  for (let y = 0; y < h; y++) {
    raw[y * (w * 3 + 1)] = 0; // filter: none
    for (let i = 1; i <= w * 3; i++) {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      raw[y * (w * 3 + 1) + i] = seed >>> 24;
    }
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** The first of these fonts the machine has (Debian's Chromium brings fonts-liberation). */
function font(candidates: string[]): Buffer | undefined {
  const found = candidates.find((p) => existsSync(p));
  return found === undefined ? undefined : readFileSync(found);
}

const ASSETS = {
  image: noisePng(160, 120),
  regular: font([
    '/usr/share/fonts/truetype/liberation/LiberationSansNarrow-Regular.ttf',
    '/usr/share/fonts/truetype/dejavu/DejaVuSans-ExtraLight.ttf',
  ]),
  bold: font([
    '/usr/share/fonts/truetype/liberation/LiberationSansNarrow-Bold.ttf',
    '/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf',
  ]),
  // Most real stylesheets declare the site's web fonts; these two are used by the body text and headings.
  stylesheet:
    '@font-face { font-family: BenchSans; src: url(/bench-fonts/regular.ttf) format("truetype") }\n' +
    '@font-face { font-family: BenchSans; font-weight: bold; src: url(/bench-fonts/bold.ttf) format("truetype") }\n' +
    'body { font-family: BenchSans, serif }\n',
  media: Buffer.alloc(64 * 1024),
};

/** What the page may fetch when its assets are served: from this fixture only, and still no scripts or frames. */
const ASSETS_CSP =
  "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; media-src 'self'";

/** Absolute and scheme-relative URLs of other hosts, in attributes, srcset and CSS alike. */
const FOREIGN_URL = /(?:https?:)?\/\/([a-z0-9-]+(?:\.[a-z0-9-]+)+)(?=[/"'\s)?#,;:]|$)/gi;

/** The page with every URL of another host pointing at this fixture's /asset/<host>/…. */
export function withLocalAssets(html: string, origin: string): string {
  return html.replace(FOREIGN_URL, (_m, host: string) => `${origin}/asset/${host}`);
}

/** Requests the fixture answered, by what Chromium fetched them as (Sec-Fetch-Dest). */
type Fetched = Record<string, number>;

class PagesFixture {
  readonly fetched: Fetched = {};
  readonly #pages = new Map<string, Buffer>();
  readonly #server = createServer({ keepAlive: true }, (req, res) => this.#serve(req, res));
  port = 0;

  async start(): Promise<void> {
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', r));
    this.port = (this.#server.address() as { port: number }).port;
    const origin = `http://127.0.0.1:${this.port}`;
    for (const name of realPageNames()) {
      const html = readFileSync(join(REAL_PAGES_DIR, name), 'utf8');
      this.#pages.set(`/csp/${name}`, Buffer.from(html));
      this.#pages.set(`/assets/${name}`, Buffer.from(withLocalAssets(html, origin)));
    }
  }

  url(serving: Serving, name: string): string {
    return `http://127.0.0.1:${this.port}/${serving}/${name}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }

  #serve(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const page = this.#pages.get(path);
    if (page) {
      const csp = path.startsWith('/csp/') ? OFFLINE_CSP : ASSETS_CSP;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': csp }).end(page);
      return;
    }
    const dest = String(req.headers['sec-fetch-dest'] ?? 'none');
    this.fetched[dest] = (this.fetched[dest] ?? 0) + 1;
    const send = (type: string, body: Buffer | string | undefined): void => {
      if (body === undefined) res.writeHead(404).end();
      else res.writeHead(200, { 'content-type': type, 'cache-control': 'max-age=3600' }).end(body);
    };
    if (path === '/bench-fonts/regular.ttf') return send('font/ttf', ASSETS.regular);
    if (path === '/bench-fonts/bold.ttf') return send('font/ttf', ASSETS.bold);
    switch (dest) {
      case 'image':
        return send('image/png', ASSETS.image);
      case 'style':
        return send('text/css', ASSETS.stylesheet);
      case 'font':
        return send('font/ttf', ASSETS.regular);
      case 'video':
      case 'audio':
      case 'track':
        return send('video/mp4', ASSETS.media);
      default:
        res.writeHead(404).end();
    }
  }
}

// ------------------------------------------------------------------ measuring
type Serving = 'csp' | 'assets';
const ARMS = [
  { serving: 'csp', blocked: false },
  { serving: 'csp', blocked: true },
  { serving: 'assets', blocked: false },
  { serving: 'assets', blocked: true },
] as const;
type Arm = (typeof ARMS)[number];
const armName = (a: Arm): string => `${a.serving}${a.blocked ? '+blocked' : ''}`;

interface Sample {
  page: string;
  arm: string;
  ms: number;
  navigationMs: number;
  status: number;
  error?: string;
  cpuNodeMs: number;
  cpuChromiumMs: number;
  fetched: Fetched;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : (s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number);
}
const round = (n: number, d = 1): number => (Number.isFinite(n) ? Math.round(n * 10 ** d) / 10 ** d : n);
const mean = (xs: number[]): number => (xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length);

interface Figures {
  n: number;
  failed: number;
  p50: number;
  p95: number;
  navigationP50: number;
  navigationP95: number;
  cpuNodeMs: number;
  cpuChromiumMs: number;
  /** Assets fetched per request, by Sec-Fetch-Dest. */
  fetchedPerRequest: Fetched;
}

function figures(samples: Sample[]): Figures {
  const ok = samples.filter((s) => s.status === 200);
  const fetched: Fetched = {};
  for (const s of samples) for (const [k, v] of Object.entries(s.fetched)) fetched[k] = (fetched[k] ?? 0) + v;
  return {
    n: samples.length,
    failed: samples.length - ok.length,
    p50: round(
      pct(
        ok.map((s) => s.ms),
        50,
      ),
    ),
    p95: round(
      pct(
        ok.map((s) => s.ms),
        95,
      ),
    ),
    navigationP50: round(
      pct(
        ok.map((s) => s.navigationMs),
        50,
      ),
    ),
    navigationP95: round(
      pct(
        ok.map((s) => s.navigationMs),
        95,
      ),
    ),
    cpuNodeMs: round(mean(samples.map((s) => s.cpuNodeMs))),
    cpuChromiumMs: round(mean(samples.map((s) => s.cpuChromiumMs))),
    fetchedPerRequest: Object.fromEntries(Object.entries(fetched).map(([k, v]) => [k, round(v / samples.length, 1)])),
  };
}

export interface RealPagesResult {
  mode: ChromiumMode;
  rounds: number;
  pages: string[];
  blocked: readonly string[];
  overall: Record<string, Figures>;
  perPage: Record<string, Record<string, Figures>>;
  /** blocked / plain, for each way of serving: p50, p95, navigation p50, Chromium CPU per request. */
  ratios: Record<Serving, Record<string, number>>;
  failures: string[];
}

export async function realPagesBench(deps: RealPagesDeps, rounds = DEFAULT_ROUNDS): Promise<RealPagesResult> {
  const fixture = new PagesFixture();
  await fixture.start();
  const svc = await deps.startService({
    EGRESS_ALLOWLIST: `127.0.0.1:${fixture.port}`,
    SCRIPT_TIMEOUT_MS: '15000',
  });
  const pid = svc.child.pid as number;
  const pages = realPageNames();
  const body = (arm: Arm, name: string): unknown => ({
    url: fixture.url(arm.serving, name),
    script: EXTRACT,
    ...(arm.blocked ? { options: { blockResourceTypes: BLOCKED } } : {}),
  });
  const samples: Sample[] = [];
  try {
    // Warm-up: every page once in every arm, not counted (Chromium's and the isolate's first runs).
    for (const name of pages) for (const arm of ARMS) await deps.call(svc.base, body(arm, name));
    // Each request's CPU and fetched assets run from its start to the next one's (its context's closing and
    // the spare made after it included, the same for every arm); requests go one at a time.
    let open:
      | {
          sample: Omit<Sample, 'cpuNodeMs' | 'cpuChromiumMs' | 'fetched'>;
          cpu0: { node: number; chromium: number };
          fetched0: Fetched;
        }
      | undefined;
    const settle = (): void => {
      if (!open) return;
      const cpu = deps.cpu(pid);
      const fetched: Fetched = {};
      for (const [k, v] of Object.entries(fixture.fetched)) {
        const d = v - (open.fetched0[k] ?? 0);
        if (d > 0) fetched[k] = d;
      }
      samples.push({
        ...open.sample,
        cpuNodeMs: cpu.node - open.cpu0.node,
        cpuChromiumMs: cpu.chromium - open.cpu0.chromium,
        fetched,
      });
      open = undefined;
    };
    for (let r = 0; r < rounds; r++) {
      for (const [i, name] of pages.entries()) {
        // The arms' order turns with each page and round: each arm runs first, second… equally often.
        const order = ARMS.map((_, k) => ARMS[(k + i + r) % ARMS.length] as Arm);
        for (const arm of order) {
          await new Promise((res) => setTimeout(res, THINK_MS));
          settle();
          const cpu0 = deps.cpu(pid);
          const fetched0 = { ...fixture.fetched };
          const s = await deps.call(svc.base, body(arm, name));
          open = {
            sample: {
              page: name,
              arm: armName(arm),
              ms: s.ms,
              navigationMs: s.timing.navigation ?? NaN,
              status: s.status,
              ...(s.error === undefined ? {} : { error: s.error }),
            },
            cpu0,
            fetched0,
          };
        }
      }
      console.log(`  round ${r + 1}/${rounds} done`);
    }
    await new Promise((res) => setTimeout(res, THINK_MS));
    settle();
  } finally {
    await svc.stop();
    await fixture.close();
  }

  const names = ARMS.map(armName);
  const overall = Object.fromEntries(names.map((a) => [a, figures(samples.filter((s) => s.arm === a))]));
  const perPage = Object.fromEntries(
    pages.map((p) => [
      p,
      Object.fromEntries(names.map((a) => [a, figures(samples.filter((s) => s.arm === a && s.page === p))])),
    ]),
  );
  const ratio = (serving: Serving): Record<string, number> => {
    const plain = overall[serving] as Figures;
    const blocked = overall[`${serving}+blocked`] as Figures;
    return {
      p50: round(blocked.p50 / plain.p50, 2),
      p95: round(blocked.p95 / plain.p95, 2),
      navigationP50: round(blocked.navigationP50 / plain.navigationP50, 2),
      cpuChromium: round(blocked.cpuChromiumMs / plain.cpuChromiumMs, 2),
      cpuNode: round(blocked.cpuNodeMs / plain.cpuNodeMs, 2),
    };
  };
  const failures = samples
    .filter((s) => s.status !== 200)
    .map((s) => `${s.page} ${s.arm}: ${s.status} ${s.error ?? ''}`);
  return {
    mode: deps.mode,
    rounds,
    pages,
    blocked: BLOCKED,
    overall,
    perPage,
    ratios: { csp: ratio('csp'), assets: ratio('assets') },
    failures,
  };
}

export function realPagesReport(r: RealPagesResult): string {
  const names = ARMS.map(armName);
  const fetched = (f: Figures): string =>
    Object.entries(f.fetchedPerRequest)
      .sort()
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none';
  const lines = [
    `### Real pages, CHROMIUM=${r.mode}: ${r.pages.length} pages × ${r.rounds} rounds, each arm interleaved; blocked: ${r.blocked.join(', ')}`,
    '',
    '| arm | n | failed | p50 ms | p95 ms | navigation p50 | navigation p95 | CPU/request: service Node ms | Chromium ms | assets fetched per request |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...names.map((a) => {
      const f = r.overall[a] as Figures;
      return `| ${a} | ${f.n} | ${f.failed} | ${f.p50} | ${f.p95} | ${f.navigationP50} | ${f.navigationP95} | ${f.cpuNodeMs} | ${f.cpuChromiumMs} | ${fetched(f)} |`;
    }),
    '',
    ...(['csp', 'assets'] as const).map(
      (s) =>
        `blocked/plain, ${s}: p50 **${r.ratios[s].p50}**, p95 ${r.ratios[s].p95}, navigation p50 ${r.ratios[s].navigationP50}, Chromium CPU **${r.ratios[s].cpuChromium}**, Node CPU ${r.ratios[s].cpuNode}`,
    ),
    '',
    '| page | ' + names.map((a) => `${a} p50 / p95 ms, Chromium CPU ms`).join(' | ') + ' |',
    '|---|' + names.map(() => '---').join('|') + '|',
    ...r.pages.map(
      (p) =>
        `| ${p} | ` +
        names
          .map((a) => {
            const f = r.perPage[p]?.[a] as Figures;
            return `${f.p50} / ${f.p95}, ${f.cpuChromiumMs}`;
          })
          .join(' | ') +
        ' |',
    ),
    '',
    r.failures.length === 0 ? 'no request failed' : `failed requests:\n${r.failures.join('\n')}`,
    '',
  ];
  return lines.join('\n');
}
