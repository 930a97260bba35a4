// The playground's examples: each names a public page and a script for it. The
// tests serve a copy of each page's relevant structure on 127.0.0.1 and check
// that the script returns what `expect` describes (test/e2e/playground/playground.test.ts).

export interface Example {
  readonly id: string;
  readonly title: string;
  readonly url: string;
  readonly script: string;
  readonly outputFormat: 'json' | 'html';
}

export const EXAMPLES: readonly Example[] = [
  {
    id: 'title',
    title: 'Page title',
    url: 'https://example.com/',
    outputFormat: 'json',
    script: `// The page is loaded before the script runs.
const title = await page.title();
console.log('loaded', page.url());
return { title, heading: await page.$eval('h1', (h) => h.textContent) };
`,
  },
  {
    id: 'table',
    title: 'Extract a table',
    url: 'https://www.w3schools.com/html/html_tables.asp',
    outputFormat: 'json',
    script: `// One object per row, keyed by the header cells.
return await page.$$eval('#customers tr', (rows) => {
  const [head, ...body] = rows.map((tr) => [...tr.children].map((td) => td.textContent.trim()));
  return body.map((cells) => Object.fromEntries(cells.map((c, i) => [head[i], c])));
});
`,
  },
  {
    id: 'click',
    title: 'Click and wait',
    url: 'https://the-internet.herokuapp.com/dynamic_loading/2',
    outputFormat: 'json',
    script: `// Click "Start", then wait for the text that appears after loading.
await page.click('#start button');
const finish = await page.waitForSelector('#finish', { visible: true, timeout: 10000 });
return await finish.evaluate((el) => el.textContent.trim());
`,
  },
  {
    id: 'cheerio',
    title: 'Parse with cheerio',
    url: 'https://news.ycombinator.com/',
    outputFormat: 'json',
    script: `// Parse the page's HTML with cheerio, as on a server.
const $ = cheerio.load(await page.content());
const stories = $('.titleline > a')
  .map((i, a) => ({ title: $(a).text(), href: $(a).attr('href') }))
  .get();
console.log(stories.length + ' stories');
return stories.slice(0, 5);
`,
  },
];
