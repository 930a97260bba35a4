// The real-pages bench (npm run bench -- --real-pages): its "assets" pages must
// fetch every asset from the fixture, or the blocked arm has nothing to block.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { withLocalAssets } from '../../../scripts/bench/real-pages.js';
import { REAL_PAGES_DIR, realPageNames } from '../../helpers/fixtures.js';

const ORIGIN = 'http://127.0.0.1:4321';

test('the real-pages bench points every URL of another host at its fixture: attributes, srcset, CSS, scheme-relative', () => {
  const page = `<img src="https://i.guim.co.uk/img/a.jpg?w=300&amp;q=85">
    <img srcset="http://a.example.com/1.jpg 1x, //b.example.org/2.jpg 2x">
    <link rel="stylesheet" href='https://static.example.net/site.css'>
    <style>@font-face { src: url(https://fonts.example.com/f.woff2) } .x { background: url("//cdn.example.com/bg.png") }</style>
    <video poster=https://v.example.com/p.jpg></video><a href="/relative">r</a>`;
  const out = withLocalAssets(page, ORIGIN);
  assert.deepEqual(
    [...out.matchAll(/(?:https?:)?\/\/[\w.-]+(?::\d+)?/g)].map((m) => m[0]),
    Array<string>(7).fill(ORIGIN),
  );
  assert.match(out, /src="http:\/\/127\.0\.0\.1:4321\/asset\/i\.guim\.co\.uk\/img\/a\.jpg\?w=300&amp;q=85"/);
  assert.match(out, /url\("http:\/\/127\.0\.0\.1:4321\/asset\/cdn\.example\.com\/bg\.png"\)/);
  assert.match(out, /href="\/relative"/);
});

test('the real-pages bench leaves no image URL of another host in any saved page', () => {
  for (const name of realPageNames()) {
    const out = withLocalAssets(readFileSync(join(REAL_PAGES_DIR, name), 'utf8'), ORIGIN);
    const foreign = [...out.matchAll(/<img[^>]*\ssrc="((?:https?:)?\/\/[^"]+)"/gi)]
      .map((m) => m[1] as string)
      .filter((u) => !u.startsWith(`${ORIGIN}/`));
    assert.deepEqual(foreign, [], name);
  }
});
