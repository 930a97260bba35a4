// After puppeteer/puppeteer test/src/queryselector.spec.ts (Apache-2.0).
import type { Case } from '../harness.js';

const area = 'queryselector';
export const cases: Case[] = [
  {
    area,
    name: '$eval should work',
    upstream: 'queryselector: Page.$eval should work',
    script: `await page.setContent('<section id="testAttribute">43543</section>'); return await page.$eval('section', (e) => e.id);`,
  },
  {
    area,
    name: '$eval should accept arguments',
    upstream: 'queryselector: Page.$eval should accept arguments',
    script: `await page.setContent('<section>hello</section>'); return await page.$eval('section', (e, suffix) => e.textContent + suffix, ' world!');`,
  },
  {
    area,
    name: '$eval should accept ElementHandles as arguments',
    upstream: 'queryselector: Page.$eval should accept ElementHandles as arguments',
    script: `await page.setContent('<section>hello</section><div> world</div>'); const divHandle = await page.$('div'); return await page.$eval('section', (e, div) => e.textContent + div.textContent, divHandle);`,
  },
  {
    area,
    name: '$eval should throw error if no element is found',
    upstream: 'queryselector: Page.$eval should throw error if no element is found',
    script: `try { await page.$eval('section', (e) => e.id); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area,
    name: '$$eval should work',
    upstream: 'queryselector: Page.$$eval should work',
    script: `await page.setContent('<div>hello</div><div>beautiful</div><div>world!</div>'); return await page.$$eval('div', (divs) => divs.length);`,
  },
  {
    area,
    name: '$$eval should accept extra arguments',
    upstream: 'queryselector: Page.$$eval should accept extra arguments',
    script: `await page.setContent('<div>hello</div><div>beautiful</div><div>world!</div>'); return await page.$$eval('div', (divs, two) => divs.length * two, 2);`,
  },
  {
    area,
    name: '$$eval should handle many elements',
    upstream: 'queryselector: Page.$$eval should handle many elements',
    script: `await page.evaluate(() => { for (let i = 0; i <= 1000; i++) { const s = document.createElement('section'); s.textContent = String(i); document.body.appendChild(s); } }); return await page.$$eval('section', (els) => els.reduce((acc, el) => Number(el.textContent) + acc, 0));`,
  },
  {
    area,
    name: '$ should query existing element',
    upstream: 'queryselector: Page.$ should query existing element',
    script: `await page.setContent('<section>test</section>'); const el = await page.$('section'); return !!el;`,
  },
  {
    area,
    name: '$ should return null for non-existing element',
    upstream: 'queryselector: Page.$ should return null for non-existing element',
    script: `const el = await page.$('non-existing-element'); return el;`,
  },
  {
    area,
    name: '$$ should query existing elements',
    upstream: 'queryselector: Page.$$ should query existing elements',
    script: `await page.setContent('<div>A</div><br/><div>B</div>'); const els = await page.$$('div'); return await Promise.all(els.map((el) => page.evaluate((e) => e.textContent, el)));`,
  },
  {
    area,
    name: '$$ should return empty array if nothing is found',
    upstream: 'queryselector: Page.$$ should return empty array if nothing is found',
    script: `return (await page.$$('div')).length;`,
  },
  {
    area,
    name: 'xpath should query existing element',
    script: `await page.setContent('<section>test</section>'); const els = await page.$$('xpath/html/body/section'); return els.length;`,
  },
  {
    area,
    name: 'xpath should return empty array for non-existing element',
    script: `return (await page.$$('xpath/html/body/non-existing-element')).length;`,
  },
  {
    area,
    name: 'ElementHandle.$ should query existing element',
    path: '/playground.html',
    script: `await page.setContent('<html><body><div class="second"><div class="inner">A</div></div></body></html>'); const html = await page.$('html'); const second = await html.$('.second'); const inner = await second.$('.inner'); return await page.evaluate((e) => e.textContent, inner);`,
  },
  {
    area,
    name: 'ElementHandle.$eval should work',
    script: `await page.setContent('<html><body><div class="tweet"><div class="like">100</div><div class="retweets">10</div></div></body></html>'); const tweet = await page.$('.tweet'); return await tweet.$eval('.like', (n) => n.innerText);`,
  },
  {
    area,
    name: 'ElementHandle.$$eval should work',
    script: `await page.setContent('<html><body><div class="tweet"><div class="like">100</div><div class="like">10</div></div></body></html>'); const tweet = await page.$('.tweet'); return await tweet.$$eval('.like', (nodes) => nodes.map((n) => n.innerText));`,
  },
  {
    area,
    name: 'pierce selector finds in shadow roots',
    path: '/shadow.html',
    script: `const h = await page.$('pierce/h1'); return await h.evaluate((e) => e.textContent);`,
  },
  {
    area,
    name: 'text selector',
    script: `await page.setContent('<div>hello <span>world</span></div>'); const el = await page.$('text/world'); return await el.evaluate((e) => e.outerHTML);`,
  },
  {
    area,
    name: '::-p-text selector',
    script: `await page.setContent('<div>hello <span>world</span></div>'); const el = await page.$('::-p-text(world)'); return await el.evaluate((e) => e.tagName);`,
  },
  {
    area,
    name: 'invalid selector throws',
    script: `try { await page.$('div[['); return 'no error'; } catch (e) { return e.name; }`,
  },
];
