// Every curl example in README.md and docs/*.md is run against a local copy of
// example.com and its answer compared with the one the page shows.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { docFiles, docSection, readDoc } from '../../helpers/docs.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { TinyProxy } from '../../helpers/proxies.js';
import { serviceFor } from '../../helpers/service.js';

interface Example {
  /** The page it is on (README.md, docs/api.md, …). */
  file: string;
  body: string;
  expected: string;
  lang: 'json' | 'html';
}

/** Each ```sh block with `curl … -d '…'`, paired with the ```json or ```html block after it, on one page. */
function examplesOf(file: string): Example[] {
  const blocks = [...readDoc(file).matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({
    lang: m[1] as string,
    text: m[2] as string,
  }));
  const out: Example[] = [];
  for (let i = 0; i + 1 < blocks.length; i++) {
    const b = blocks[i] as { lang: string; text: string };
    const next = blocks[i + 1] as { lang: string; text: string };
    const d = /curl[\s\S]*-d '([^']*)'/.exec(b.text);
    if (b.lang === 'sh' && d && (next.lang === 'json' || next.lang === 'html')) {
      out.push({ file, body: d[1] as string, expected: next.text.trimEnd(), lang: next.lang });
    }
  }
  return out;
}

function examples(): Example[] {
  return docFiles().flatMap(examplesOf);
}

const site = new FixtureServer({ '/': html(EXAMPLE_DOMAIN_HTML) });
/** The upstream proxy the proxy example (docs/network.md) names ("de"): a real tinyproxy on loopback. */
const proxy = new TinyProxy('readme', 'readme-proxy-password');
const fixtures = {
  url: (path: string): string => site.url(path),
  get allowEntry(): string {
    return site.allowEntry;
  },
  async start(): Promise<void> {
    await site.start();
    await proxy.start();
  },
  async close(): Promise<void> {
    await proxy.close();
    await site.close();
  },
};
// The site stands in for a public server: a local (allow-listed) target never goes through a proxy.
const svc = serviceFor(
  fixtures,
  () => ({ PROXIES: `de=http://readme:readme-proxy-password@127.0.0.1:${proxy.port}` }),
  {
    egressSeam: {
      get publicTargets() {
        return [{ address: '127.0.0.1', port: site.port }];
      },
    },
  },
);

test("the README's own curl example is among those run", () => {
  assert.ok(examplesOf('README.md').length >= 1);
});

test('the docs have an example for json, html, scriptBase64, console.log, cheerio, the no-script check, options, a failure and a proxy', () => {
  const bodies = examples().map((e) => e.body);
  assert.ok(bodies.length >= 7, `found ${bodies.length} examples`);
  for (const needle of [
    '"outputFormat":"html"',
    '"scriptBase64"',
    'console.log',
    'cheerio.load',
    '{"url":"https://example.com"}',
    '"options":{',
    'page.click(\\"#buy\\")',
    '"proxy":"de"',
  ]) {
    assert.ok(
      bodies.some((b) => b.includes(needle)),
      `an example with ${needle}`,
    );
  }
});

for (const [i, ex] of examples().entries()) {
  test(`example ${i + 1} (${ex.file}) answers what the page shows: ${ex.body.slice(0, 80)}`, async () => {
    const local = fixtures.url('').replace(/\/$/, '');
    const r = await svc.post(ex.body.replaceAll('https://example.com', local));
    // An example of a failure shows its status in the body.
    const expectedStatus =
      ex.lang === 'json' ? ((JSON.parse(ex.expected) as { statusCode?: number }).statusCode ?? 200) : 200;
    assert.equal(r.status, expectedStatus, r.text);
    const text = r.text.replaceAll(local, 'https://example.com');
    if (ex.lang === 'html') {
      assert.equal(text, ex.expected);
      return;
    }
    const got = JSON.parse(text) as Record<string, unknown>;
    const want = JSON.parse(ex.expected) as Record<string, unknown>;
    if (want.executionTime !== undefined) assert.equal(typeof got.executionTime, 'number');
    delete got.executionTime;
    delete want.executionTime;
    // A failure's page calls: their durations vary from run to run.
    for (const body of [got, want]) {
      if (!Array.isArray(body.pageCalls)) continue;
      for (const call of body.pageCalls as Record<string, unknown>[]) {
        assert.equal(typeof call.durationMs, 'number');
        delete call.durationMs;
      }
    }
    assert.deepEqual(got, want);
  });
}

test('the configuration table (docs/configuration.md) lists every environment variable the service reads', () => {
  const table = docSection('docs/configuration.md', '# Configuration');
  const source = readFileSync(new URL('../../../src/common/config.ts', import.meta.url), 'utf8');
  const names = new Set([...source.matchAll(/(?:int\('|env\.)([A-Z_]+)/g)].map((m) => m[1] as string));
  assert.ok(names.size >= 15);
  for (const name of names) assert.match(table, new RegExp(`\\| \`${name}\` \\|`), name);
});

test("docs/network.md's proxy example went through the proxy it names", () => {
  assert.ok(
    proxy.requests().some((l) => l.startsWith(`CONNECT 127.0.0.1:${site.port} `)),
    proxy.requests().join('\n'),
  );
});
