// After puppeteer/puppeteer test/src/locator.spec.ts (Apache-2.0). Where the test
// listens for the locator's action event (LocatorEvent.Action, the string 'action'),
// the case returns whether it fired. Where the test ticks a fake clock past a
// 5000 ms timeout, the case sets a short timeout instead: the same assertion on the
// same error, without waiting five seconds of the script's time.
import type { Case } from '../harness.js';

const area = 'locator';
const BUTTON = `<button onclick="this.innerText = 'clicked';">test</button>`;

export const cases: Case[] = [
  {
    area,
    name: 'should work with a frame',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent(${JSON.stringify(BUTTON)}); let willClick = false; await page.mainFrame().locator('button').on('action', () => { willClick = true; }).click(); const button = await page.$('button'); return [await button.evaluate((el) => el.innerText), willClick];`,
  },
  {
    area,
    name: 'should work without preconditions',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent(${JSON.stringify(BUTTON)}); let willClick = false; await page.locator('button').setEnsureElementIsInTheViewport(false).setTimeout(0).setVisibility(null).setWaitForEnabled(false).setWaitForStableBoundingBox(false).on('action', () => { willClick = true; }).click(); const button = await page.$('button'); return [await button.evaluate((el) => el.innerText), willClick];`,
  },
  {
    area,
    name: 'Locator.click should work for multiple selectors',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent(${JSON.stringify(BUTTON)}); let clicked = false; await page.locator('::-p-text(test), ::-p-xpath(/button)').on('action', () => { clicked = true; }).click(); const button = await page.$('button'); return [await button.evaluate((el) => el.innerText), clicked];`,
  },
  {
    area,
    name: 'Locator.click should work if the element is out of viewport',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent('<button style="margin-top: 600px;" onclick="this.innerText = \\'clicked\\';">test</button>'); await page.locator('button').click(); const button = await page.$('button'); return await button.evaluate((el) => el.innerText);`,
  },
  {
    area,
    name: 'Locator.click should work if the element becomes visible later',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent('<button style="display: none;" onclick="this.innerText = \\'clicked\\';">test</button>'); const button = await page.$('button'); const result = page.locator('button').click().catch((err) => err); const before = await button.evaluate((el) => el.innerText); await button.evaluate((el) => { el.style.display = 'block'; }); const maybeError = await result; if (maybeError instanceof Error) throw maybeError; return [before, await button.evaluate((el) => el.innerText)];`,
  },
  {
    area,
    name: 'Locator.click should work if the element becomes enabled later',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent('<button disabled onclick="this.innerText = \\'clicked\\';">test</button>'); const button = await page.$('button'); const result = page.locator('button').click(); const before = await button.evaluate((el) => el.innerText); await button.evaluate((el) => { el.disabled = false; }); await result; return [before, await button.evaluate((el) => el.innerText)];`,
  },
  {
    area,
    name: 'Locator.click should work if multiple conditions are satisfied later',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent('<button style="margin-top: 600px;" style="display: none;" disabled onclick="this.innerText = \\'clicked\\';">test</button>'); const button = await page.$('button'); const result = page.locator('button').click(); const before = await button.evaluate((el) => el.innerText); await button.evaluate((el) => { el.disabled = false; el.style.display = 'block'; }); await result; return [before, await button.evaluate((el) => el.innerText)];`,
  },
  {
    area,
    name: 'Locator.click should time out',
    script: `page.setDefaultTimeout(300); await page.setViewport({ width: 500, height: 500 }); await page.setContent('<button style="display: none;" onclick="this.innerText = \\'clicked\\';">test</button>'); return await page.locator('button').click().then(() => 'no error', (e) => [e.name, e.message]);`,
  },
  {
    area,
    name: 'Locator.click can be aborted',
    script: `page.setDefaultTimeout(3000); await page.setViewport({ width: 500, height: 500 }); await page.setContent('<button style="display: none;" onclick="this.innerText = \\'clicked\\';">test</button>'); const abortController = new AbortController(); const result = page.locator('button').click({ signal: abortController.signal }); await new Promise((r) => setTimeout(r, 200)); abortController.abort(); return await result.then(() => 'no error', (e) => /aborted/.test(e.message));`,
  },
  {
    area,
    name: 'Locator.hover should work',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent('<button onmouseenter="this.innerText = \\'hovered\\';">test</button>'); let hovered = false; await page.locator('button').on('action', () => { hovered = true; }).hover(); const button = await page.$('button'); return [await button.evaluate((el) => el.innerText), hovered];`,
  },
  {
    area,
    name: 'Locator.scroll should work',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent('<div style="height: 500px; width: 500px; overflow: scroll;"><div style="height: 1000px; width: 1000px;">test</div></div>'); let scrolled = false; await page.locator('div').on('action', () => { scrolled = true; }).scroll({ scrollTop: 500, scrollLeft: 500 }); const scrollable = await page.$('div'); return [await scrollable.evaluate((el) => el.scrollTop + ' ' + el.scrollLeft), scrolled];`,
  },
  {
    area,
    name: 'Locator.change should work for selects',
    upstream: 'locator: Locator.fill should work for selects',
    script: `await page.setContent('<select><option value="value1">Option 1</option><option value="value2">Option 2</option><select>'); let filled = false; await page.locator('select').on('action', () => { filled = true; }).fill('value2'); return [await page.evaluate(() => document.querySelector('select')?.value === 'value2'), filled];`,
  },
  {
    area,
    name: 'Locator.change should work for inputs',
    upstream: 'locator: Locator.fill should work for inputs',
    script: `await page.setContent('<input>'); await page.locator('input').fill('test'); return await page.evaluate(() => document.querySelector('input')?.value === 'test');`,
  },
  {
    area,
    name: 'Locator.change should work if the input becomes enabled later',
    upstream: 'locator: Locator.fill should work if the input becomes enabled later',
    script: `await page.setContent('<input disabled>'); const input = await page.$('input'); const result = page.locator('input').fill('test'); const before = await input.evaluate((el) => el.value); await input.evaluate((el) => { el.disabled = false; }); await result; return [before, await input.evaluate((el) => el.value)];`,
  },
  {
    area,
    name: 'Locator.change should work for contenteditable',
    upstream: 'locator: Locator.fill should work for contenteditable',
    script: `await page.setContent('<div contenteditable="true">'); await page.locator('div').fill('test'); return await page.evaluate(() => document.querySelector('div')?.innerText === 'test');`,
  },
  {
    area,
    name: 'Locator.change should work for pre-filled inputs',
    upstream: 'locator: Locator.fill should work for pre-filled inputs',
    script: `await page.setContent('<input value="te">'); await page.locator('input').fill('test'); return await page.evaluate(() => document.querySelector('input')?.value === 'test');`,
  },
  {
    area,
    name: 'Locator.change should override pre-filled inputs',
    upstream: 'locator: Locator.fill should override pre-filled inputs',
    script: `await page.setContent('<input value="wrong prefix">'); await page.locator('input').fill('test'); return await page.evaluate(() => document.querySelector('input')?.value === 'test');`,
  },
  {
    area,
    name: 'Locator.change should work for non-text inputs',
    upstream: 'locator: Locator.fill should work for non-text inputs',
    script: `await page.setContent('<input type="color">'); await page.locator('input').fill('#333333'); return await page.evaluate(() => document.querySelector('input')?.value === '#333333');`,
  },
  {
    area,
    name: 'Locator.race races multiple locators',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent('<button onclick="window.count++;">test</button>'); await page.evaluate(() => { window.count = 0; }); await Locator.race([page.locator('button'), page.locator('button')]).click(); return await page.evaluate(() => globalThis.count);`,
  },
  {
    area,
    name: 'Locator.race can be aborted',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent('<button style="display: none;" onclick="this.innerText = \\'clicked\\';">test</button>'); const abortController = new AbortController(); const result = Locator.race([page.locator('button'), page.locator('button')]).setTimeout(3000).click({ signal: abortController.signal }); await new Promise((r) => setTimeout(r, 200)); abortController.abort(); return await result.then(() => 'no error', (e) => /aborted/.test(e.message));`,
  },
  {
    area,
    name: 'Locator.race should time out when all locators do not match',
    script: `await page.setContent('<button>test</button>'); return await Locator.race([page.locator('not-found'), page.locator('not-found')]).setTimeout(300).click().then(() => 'no error', (e) => [e.name, e.message]);`,
  },
  {
    area,
    name: 'Locator.race should not time out when one of the locators matches',
    script: `await page.setContent('<button>test</button>'); return await Locator.race([page.locator('not-found'), page.locator('button')]).click();`,
  },
  {
    area,
    name: 'Locator.prototype.map should work',
    script: `await page.setContent('<div>test</div>'); const a = await page.locator('::-p-text(test)').map((element) => element.getAttribute('clickable')).wait(); await page.evaluate(() => { document.querySelector('div')?.setAttribute('clickable', 'true'); }); const b = await page.locator('::-p-text(test)').map((element) => element.getAttribute('clickable')).wait(); return [a, b];`,
  },
  {
    area,
    name: 'Locator.prototype.map should work with throws',
    script: `await page.setContent('<div>test</div>'); const result = page.locator('::-p-text(test)').map((element) => { const clickable = element.getAttribute('clickable'); if (!clickable) throw new Error('Missing \`clickable\` as an attribute'); return clickable; }).wait(); await page.evaluate(() => { document.querySelector('div')?.setAttribute('clickable', 'true'); }); return await result;`,
  },
  {
    area,
    name: 'Locator.prototype.map should work with expect',
    script: `await page.setContent('<div>test</div>'); const result = page.locator('::-p-text(test)').filter((element) => element.getAttribute('clickable') !== null).map((element) => element.getAttribute('clickable')).wait(); await page.evaluate(() => { document.querySelector('div')?.setAttribute('clickable', 'true'); }); return await result;`,
  },
  {
    area,
    name: 'Locator.prototype.filter should resolve as soon as the predicate matches',
    script: `await page.setContent('<div>test</div>'); const result = page.locator('::-p-text(test)').setTimeout(3000).filter(async (element) => element.getAttribute('clickable') === 'true').filter((element) => element.getAttribute('clickable') === 'true').hover(); await new Promise((r) => setTimeout(r, 200)); await page.evaluate(() => { document.querySelector('div')?.setAttribute('clickable', 'true'); }); return await result;`,
  },
  {
    area,
    name: 'Locator.prototype.wait should work',
    script: `void page.setContent('<script>setTimeout(() => { const element = document.createElement("div"); element.innerText = "test2"; document.body.append(element); }, 50);</script>'); return await page.locator('div').wait();`,
  },
  {
    area,
    name: 'Locator.prototype.waitHandle should work',
    script: `void page.setContent('<script>setTimeout(() => { const element = document.createElement("div"); element.innerText = "test2"; document.body.append(element); }, 50);</script>'); const handle = await page.locator('div').waitHandle(); return handle !== undefined;`,
  },
  {
    area,
    name: 'Locator.prototype.clone should work',
    script: `const locator = page.locator('div'); const clone = locator.clone(); return locator !== clone;`,
  },
  {
    area,
    name: 'FunctionLocator should work',
    script: `return await page.locator(() => new Promise((resolve) => setTimeout(() => resolve(true), 100))).wait();`,
  },
  {
    area,
    name: 'FunctionLocator should work with actions',
    script: `await page.setContent('<div onclick="window.clicked = true">test</div>'); await page.locator(() => document.getElementsByTagName('div')[0]).click(); return await page.evaluate(() => window.clicked);`,
  },
  // locator.filterHandle(predicate): Puppeteer's own method (marked internal in its types), whose
  // predicate runs where the script runs and gets each element found as a handle.
  {
    area,
    name: 'Locator.prototype.filterHandle should resolve as soon as the predicate matches',
    script: `await page.setContent('<div>test</div>'); const result = page.locator('::-p-text(test)').setTimeout(3000).filterHandle(async (handle) => (await handle.evaluate((e) => e.getAttribute('clickable'))) === 'true').hover(); await page.evaluate(() => setTimeout(() => document.querySelector('div').setAttribute('clickable', 'true'), 100)); return await result;`,
  },
  {
    area,
    name: 'Locator.prototype.filterHandle gives the predicate the element found',
    script: `await page.setContent('<div id="first">a</div>'); const seen = []; const h = await page.locator('div').filterHandle(async (handle) => { seen.push(await handle.evaluate((e) => e.id)); return true; }).waitHandle(); return [seen, await h.evaluate((e) => e.id)];`,
  },
  {
    area,
    name: 'Locator.prototype.filterHandle times out when the predicate never matches',
    script: `await page.setContent('<div>test</div>'); try { await page.locator('div').setTimeout(300).filterHandle(() => false).wait(); return 'no error'; } catch (e) { return [e.name, e.message]; }`,
  },
  {
    area,
    // How many times the predicate ran within the timeout depends on the machine's load, on both sides
    // (seen: Puppeteer once, pagescript twice, under load): only the error is compared.
    name: 'Locator.prototype.filterHandle: a predicate that throws ends in the timeout error',
    script: `await page.setContent('<div>test</div>'); try { await page.locator('div').setTimeout(300).filterHandle(() => { throw new Error('nope'); }).wait(); return 'no error'; } catch (e) { return [e.name, e.message]; }`,
  },
];
