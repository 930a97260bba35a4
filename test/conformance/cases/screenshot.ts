// After puppeteer/puppeteer test/src/screenshot.spec.ts (Apache-2.0). Puppeteer
// compares each image with a golden file; a case returns the image's format and
// size in pixels (read from its header), which the golden file fixes, so the two
// sides are compared on the same thing without depending on font rasterisation.
import type { Case } from '../harness.js';

const area = 'screenshot';
/** [format, width, height] of PNG, JPEG or WebP bytes (or base64 of them). */
export const INFO = `const info = (img) => {
  const b = typeof img === 'string' ? Uint8Array.from(atob(img), (c) => c.charCodeAt(0)) : img;
  const be32 = (i) => ((b[i] << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3]) >>> 0;
  if (b[0] === 0x89 && b[1] === 0x50) return ['png', be32(16), be32(20)];
  if (b[0] === 0xff && b[1] === 0xd8) {
    for (let i = 2; i + 9 < b.length; ) {
      const marker = b[i + 1];
      const len = (b[i + 2] << 8) | b[i + 3];
      if (marker >= 0xc0 && marker <= 0xc3) return ['jpeg', (b[i + 7] << 8) | b[i + 8], (b[i + 5] << 8) | b[i + 6]];
      i += 2 + len;
    }
    return ['jpeg'];
  }
  if (String.fromCharCode(b[0], b[1], b[2], b[3]) === 'RIFF') return ['webp', String.fromCharCode(b[8], b[9], b[10], b[11])];
  return ['unknown', b.length];
};`;

export const cases: Case[] = [
  {
    area,
    name: 'should get screenshot bigger than the viewport',
    upstream: 'screenshot: Page.screenshot should get screenshot bigger than the viewport',
    path: '/grid.html',
    script: `${INFO} await page.setViewport({ width: 50, height: 50 }); await page.goto(server.PREFIX + '/grid.html'); return info(await page.screenshot({ clip: { x: 25, y: 25, width: 100, height: 100 } }));`,
  },
  {
    area,
    name: 'should run in parallel',
    upstream: 'screenshot: Page.screenshot should run in parallel',
    path: '/grid.html',
    script: `${INFO} await page.setViewport({ width: 500, height: 500 }); const shots = await Promise.all([0, 1, 2].map((i) => page.screenshot({ clip: { x: 50 * i, y: 0, width: 50, height: 50 } }))); return shots.map(info);`,
  },
  {
    area,
    name: 'should take fullPage screenshots',
    upstream: 'screenshot: Page.screenshot should take fullPage screenshots',
    path: '/grid.html',
    script: `${INFO} await page.setViewport({ width: 500, height: 500 }); return info(await page.screenshot({ fullPage: true }));`,
  },
  {
    area,
    name: 'should allow transparency',
    upstream: 'screenshot: Cdp should allow transparency',
    script: `${INFO} await page.setViewport({ width: 100, height: 100 }); await page.goto(server.EMPTY_PAGE); const s = await page.screenshot({ omitBackground: true }); return [...info(s), s[25]];`,
  },
  {
    area,
    name: 'should render white background on jpeg file',
    upstream: 'screenshot: Cdp should render white background on jpeg file',
    script: `${INFO} await page.setViewport({ width: 100, height: 100 }); await page.goto(server.EMPTY_PAGE); return info(await page.screenshot({ omitBackground: true, type: 'jpeg' }));`,
  },
  {
    area,
    name: 'should work with webp',
    upstream: 'screenshot: ElementHandle.screenshot should work with webp',
    path: '/grid.html',
    script: `${INFO} await page.setViewport({ width: 100, height: 100 }); const s = await page.screenshot({ type: 'webp' }); return [s instanceof Uint8Array, info(s)];`,
  },
  {
    area,
    name: 'should work with odd clip size on Retina displays',
    upstream: 'screenshot: Page.screenshot should work with odd clip size on Retina displays',
    script: `${INFO} return info(await page.screenshot({ clip: { x: 0, y: 0, width: 11, height: 11 } }));`,
  },
  {
    area,
    name: 'should return base64',
    upstream: 'screenshot: Page.screenshot should return base64',
    path: '/grid.html',
    script: `${INFO} await page.setViewport({ width: 500, height: 500 }); const s = await page.screenshot({ encoding: 'base64' }); return [typeof s, info(s)];`,
  },
  {
    area,
    name: 'ElementHandle.screenshot should work',
    path: '/grid.html',
    script: `${INFO} await page.setViewport({ width: 500, height: 500 }); await page.evaluate(() => window.scrollBy(50, 100)); const el = await page.$('.box:nth-of-type(3)'); return info(await el.screenshot());`,
  },
  {
    area,
    name: 'ElementHandle.screenshot should take into account padding and border',
    script: `${INFO} await page.setViewport({ width: 500, height: 500 }); await page.setContent('something above<style>div { border: 2px solid blue; background: green; width: 50px; height: 50px; }</style><div></div>'); const el = await page.$('div'); return info(await el.screenshot());`,
  },
  {
    area,
    name: 'ElementHandle.screenshot should capture full element when larger than viewport',
    script: `${INFO} await page.setViewport({ width: 500, height: 500 }); await page.setContent('something above<style>div.to-screenshot { border: 1px solid blue; width: 600px; height: 600px; margin-left: 50px; } ::-webkit-scrollbar { display: none; }</style><div class="to-screenshot"></div>'); const el = await page.$('div.to-screenshot'); const shot = info(await el.screenshot()); return [shot, await page.evaluate(() => ({ w: window.innerWidth, h: window.innerHeight }))];`,
  },
  {
    area,
    name: 'ElementHandle.screenshot should scroll element into view',
    script: `${INFO} await page.setViewport({ width: 500, height: 500 }); await page.setContent('something above<style>div.above { border: 2px solid blue; background: red; height: 1500px; } div.to-screenshot { border: 2px solid blue; background: green; width: 50px; height: 50px; }</style><div class="above"></div><div class="to-screenshot"></div>'); const el = await page.$('div.to-screenshot'); return info(await el.screenshot());`,
  },
  {
    area,
    name: 'ElementHandle.screenshot should work with a rotated element',
    script: `${INFO} await page.setViewport({ width: 500, height: 500 }); await page.setContent('<div style="position:absolute; top: 100px; left: 100px; width: 100px; height: 100px; background: green; transform: rotateZ(200deg);">&nbsp;</div>'); const el = await page.$('div'); return info(await el.screenshot());`,
  },
  {
    area,
    name: 'ElementHandle.screenshot should fail to screenshot a detached element',
    script: `await page.setContent('<h1>remove this</h1>'); const el = await page.$('h1'); await page.evaluate((e) => e.remove(), el); return await el.screenshot().then(() => 'no error', (e) => e.message);`,
  },
  {
    area,
    name: 'ElementHandle.screenshot should not hang with zero width/height element',
    script: `await page.setContent('<div style="width: 50px; height: 0"></div>'); const div = await page.$('div'); return await div.screenshot().then(() => 'no error', (e) => e.message);`,
  },
  {
    area,
    name: 'ElementHandle.screenshot should work for an element with fractional dimensions',
    script: `${INFO} await page.setContent('<div style="width:48.51px;height:19.8px;border:1px solid black;"></div>'); const el = await page.$('div'); return info(await el.screenshot());`,
  },
  {
    area,
    name: 'ElementHandle.screenshot should work for an element with an offset',
    script: `${INFO} await page.setContent('<div style="position:absolute; top: 10.3px; left: 20.4px;width:50.3px;height:20.2px;border:1px solid black;"></div>'); const el = await page.$('div'); return info(await el.screenshot());`,
  },
];
