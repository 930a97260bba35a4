// After puppeteer/puppeteer test/src/queryhandler.spec.ts and ariaqueryhandler.spec.ts
// (Apache-2.0). The custom query handler tests (Puppeteer.registerCustomQueryHandler)
// are not here: registering one is a browser-wide act of the Puppeteer instance,
// not of a page, and scripts have no Puppeteer namespace.
import type { Case } from '../harness.js';

const SHADOW = `<script>
  const div = document.createElement('div');
  const shadowRoot = div.attachShadow({ mode: 'open' });
  const div1 = document.createElement('div');
  div1.textContent = 'Hello';
  div1.className = 'foo';
  const div2 = document.createElement('div');
  div2.textContent = 'World';
  div2.className = 'foo';
  shadowRoot.appendChild(div1);
  shadowRoot.appendChild(div2);
  document.documentElement.appendChild(div);
</script>`;
const SET_SHADOW = `await page.setContent(${JSON.stringify(SHADOW)});`;
const IDS = `const ids = (list) => Promise.all(list.map((e) => e.evaluate((el) => el.id)));`;
const TEXTS = `const texts = (list) => Promise.all(list.map((e) => e.evaluate((el) => el.textContent)));`;

/** The page of ariaqueryhandler.spec.ts's "queryOne (Chromium web test)". */
const ARIA_WEB_TEST = `<h2 id="shown">title</h2>
<h2 id="hidden" aria-hidden="true">title</h2>
<div id="node1" aria-labeledby="node2"></div>
<div id="node2" aria-label="bar"></div>
<div id="node3" aria-label="foo"></div>
<div id="node4" class="container">
<div id="node5" role="button" aria-label="foo"></div>
<div id="node6" role="button" aria-label="foo"></div>
<div id="node7" hidden role="button" aria-label="foo"></div>
<div id="node8" role="button" aria-label="bar"></div>
</div>
<button id="node10">text content</button>
<h1 id="node11">text content</h1>
<h1 id="node12" role="presentation">text content</h1>
<script>
const div = document.createElement('div');
const shadowRoot = div.attachShadow({mode: 'open'});
const h1 = document.createElement('h1');
h1.textContent = 'text content';
h1.id = 'node13';
shadowRoot.appendChild(h1);
document.documentElement.appendChild(div);
</script>
<img id="node20" src="" alt="Accessible Name">
<input id="node21" type="submit" value="Accessible Name">
<label id="node22" for="node23">Accessible Name</label>
<input id="node23">
<div id="node24" title="Accessible Name"></div>
<div role="treeitem" id="node30">
<div role="treeitem" id="node31">
<div role="treeitem" id="node32">item1</div>
<div role="treeitem" id="node33">item2</div>
</div>
<div role="treeitem" id="node34">item3</div>
</div>
<div aria-describedby="node30"></div>`;
const SET_ARIA = `await page.setContent(${JSON.stringify(ARIA_WEB_TEST)});`;
const ADD_ELEMENT = `const addElement = (tag) => document.body.appendChild(document.createElement(tag));`;

export const cases: Case[] = [
  // ------------------------------------------------------------ queryhandler
  {
    area: 'queryhandler',
    name: 'Pierce selectors should find first element in shadow',
    script: `${SET_SHADOW} const div = await page.$('pierce/.foo'); return await div.evaluate((el) => el.textContent);`,
  },
  {
    area: 'queryhandler',
    name: 'Pierce selectors should find all elements in shadow',
    script: `${SET_SHADOW} ${TEXTS} return (await texts(await page.$$('pierce/.foo'))).join(' ');`,
  },
  {
    area: 'queryhandler',
    name: 'Pierce selectors should find first child element',
    script: `${SET_SHADOW} const parent = await page.$('html > div'); const child = await parent.$('pierce/div'); return await child.evaluate((el) => el.textContent);`,
  },
  {
    area: 'queryhandler',
    name: 'Pierce selectors should find all child elements',
    script: `${SET_SHADOW} ${TEXTS} const parent = await page.$('html > div'); return (await texts(await parent.$$('pierce/div'))).join(' ');`,
  },
  {
    area: 'queryhandler',
    name: 'Text selectors in Page should query existing element',
    script: `await page.setContent('<section>test</section>'); return [!!(await page.$('text/test')), (await page.$$('text/test')).length];`,
  },
  {
    area: 'queryhandler',
    name: 'Text selectors in Page should return empty array for non-existing element',
    script: `return [await page.$('text/test'), (await page.$$('text/test')).length];`,
  },
  {
    area: 'queryhandler',
    name: 'Text selectors in Page should return first element',
    script: `await page.setContent('<div id="1">a</div><div>a</div>'); const element = await page.$('text/a'); return await element?.evaluate((e) => e.id);`,
  },
  {
    area: 'queryhandler',
    name: 'Text selectors in Page should return multiple elements',
    script: `await page.setContent('<div>a</div><div>a</div>'); return (await page.$$('text/a')).length;`,
  },
  {
    area: 'queryhandler',
    name: 'Text selectors in Page should pierce shadow DOM',
    script: `await page.evaluate(() => { const div = document.createElement('div'); const shadow = div.attachShadow({ mode: 'open' }); const diva = document.createElement('div'); shadow.append(diva); const divb = document.createElement('div'); shadow.append(divb); diva.innerHTML = 'a'; divb.innerHTML = 'b'; document.body.append(div); }); const element = await page.$('text/a'); return await element?.evaluate((e) => e.textContent);`,
  },
  {
    area: 'queryhandler',
    name: 'Text selectors in Page should query deeply nested text',
    script: `await page.setContent('<div><div>a</div><div>b</div></div>'); const element = await page.$('text/a'); return await element?.evaluate((e) => e.textContent);`,
  },
  {
    area: 'queryhandler',
    name: 'Text selectors in Page should query inputs',
    script: `await page.setContent('<input value="a">'); const element = await page.$('text/a'); return await element?.evaluate((e) => e.value);`,
  },
  {
    area: 'queryhandler',
    name: 'Text selectors in Page should not query radio',
    script: `await page.setContent('<radio value="a">'); return await page.$('text/a');`,
  },
  {
    area: 'queryhandler',
    name: 'Text selectors in Page should query text spanning multiple elements',
    script: `await page.setContent('<div><span>a</span> <span>b</span><div>'); const element = await page.$('text/a b'); return await element?.evaluate((e) => e.textContent);`,
  },
  {
    area: 'queryhandler',
    name: 'Text selectors in Page should clear caches',
    script: `await page.setContent('<div id=target1>text</div><input id=target2 value=text><div id=target3>text</div>'); const div = await page.$('#target1'); const input = await page.$('#target2'); const out = []; const first = () => page.$eval('text/text', (e) => e.id); const count = () => page.$$eval('text/text', (es) => es.length); await div.evaluate((d) => { d.textContent = 'text'; }); out.push(await first()); await div.evaluate((d) => { d.textContent = 'foo'; }); out.push(await first()); await input.evaluate((i) => { i.value = ''; }); await input.type('foo'); out.push(await first()); await div.evaluate((d) => { d.textContent = 'text'; }); await input.evaluate((i) => { i.value = ''; }); await input.type('text'); out.push(await count()); await div.evaluate((d) => { d.textContent = 'foo'; }); out.push(await count()); await input.evaluate((i) => { i.value = ''; }); await input.type('foo'); out.push(await count()); return out;`,
  },
  {
    area: 'queryhandler',
    name: 'Text selectors in ElementHandles should query existing element',
    script: `await page.setContent('<div class="a"><span>a</span></div>'); const el = await page.$('div'); return [!!(await el.$('text/a')), (await el.$$('text/a')).length];`,
  },
  {
    area: 'queryhandler',
    name: 'Text selectors in ElementHandles should return null for non-existing element',
    script: `await page.setContent('<div class="a"></div>'); const el = await page.$('div'); return [await el.$('text/a'), (await el.$$('text/a')).length];`,
  },
  {
    area: 'queryhandler',
    name: 'XPath selectors in Page should query existing element',
    script: `await page.setContent('<section>test</section>'); return [!!(await page.$('xpath/html/body/section')), (await page.$$('xpath/html/body/section')).length];`,
  },
  {
    area: 'queryhandler',
    name: 'XPath selectors in Page should return first element',
    script: `await page.setContent('<div>a</div><div></div>'); const element = await page.$('xpath/html/body/div'); return await element?.evaluate((e) => e.textContent === 'a');`,
  },
  {
    area: 'queryhandler',
    name: 'XPath selectors in Page should return multiple elements',
    script: `await page.setContent('<div></div><div></div>'); return (await page.$$('xpath/html/body/div')).length;`,
  },
  {
    area: 'queryhandler',
    name: 'XPath selectors in ElementHandles should query existing element',
    script: `await page.setContent('<div class="a">a<span></span></div>'); const el = await page.$('div'); return [!!(await el.$('xpath/span')), (await el.$$('xpath/span')).length];`,
  },
  {
    area: 'queryhandler',
    name: 'XPath selectors in ElementHandles should return null for non-existing element',
    script: `await page.setContent('<div class="a">a</div>'); const el = await page.$('div'); return [await el.$('xpath/span'), (await el.$$('xpath/span')).length];`,
  },
  {
    area: 'queryhandler',
    name: 'P selectors should work with CSS selectors',
    path: '/p-selectors.html',
    script: `const element = await page.$('div > button'); const isB = await element.evaluate((e) => e.id === 'b'); for (const selector of ['.user_row[data-user-id="\\\\38 "]:not(.deactivated_user)', "input[value='Search']:not([class='hidden'])", '[data-test-id^="test-"]:not([data-test-id^="test-foo"])']) await page.$$(selector); return isB;`,
  },
  {
    area: 'queryhandler',
    name: 'P selectors should work with deep combinators',
    path: '/p-selectors.html',
    script: `const id = (e) => e?.evaluate((el) => el.id); return [await id(await page.$('div >>>> div')), await id((await page.$$('div >>> div'))[1]), await id((await page.$$('#c >>>> div'))[0]), await id((await page.$$('#c >>> div'))[0])];`,
  },
  {
    area: 'queryhandler',
    name: 'P selectors should work with text selectors',
    path: '/p-selectors.html',
    script: `const element = await page.$('div ::-p-text(world)'); return await element.evaluate((e) => e.id);`,
  },
  {
    area: 'queryhandler',
    name: 'P selectors should work ARIA selectors',
    path: '/p-selectors.html',
    script: `const element = await page.$('div ::-p-aria(world)'); return await element.evaluate((e) => e.id);`,
  },
  {
    area: 'queryhandler',
    name: 'P selectors should work for ARIA selectors in multiple isolated worlds',
    path: '/p-selectors.html',
    script: `let element = await page.waitForSelector('::-p-aria(world)'); const a = await element.evaluate((e) => e.id); await element.$('::-p-aria(world)'); element = await page.waitForSelector('::-p-aria(world)'); return [a, await element.evaluate((e) => e.id)];`,
  },
  {
    area: 'queryhandler',
    name: 'P selectors should work ARIA selectors with role',
    path: '/p-selectors.html',
    script: `const element = await page.$('::-p-aria(world[role="button"])'); return await element.evaluate((e) => e.id);`,
  },
  {
    area: 'queryhandler',
    name: 'P selectors should work ARIA selectors with name and role',
    path: '/p-selectors.html',
    script: `const element = await page.$('::-p-aria([name="world"][role="button"])'); return await element.evaluate((e) => e.id);`,
  },
  {
    area: 'queryhandler',
    name: 'P selectors should work XPath selectors',
    path: '/p-selectors.html',
    script: `const element = await page.$('div ::-p-xpath(//button)'); return await element.evaluate((e) => e.id);`,
  },
  {
    area: 'queryhandler',
    name: 'P selectors should work with :hover',
    path: '/p-selectors.html',
    script: `let button = await page.$('div ::-p-text(world)'); await button.hover(); await button.dispose(); button = await page.$('div ::-p-text(world):hover'); return await button.evaluate((span) => ({ textContent: span.textContent, tagName: span.tagName }));`,
  },
  {
    area: 'queryhandler',
    name: 'P selectors should work with selector lists',
    path: '/p-selectors.html',
    script: `return (await page.$$('div, ::-p-text(world)')).length;`,
  },
  {
    area: 'queryhandler',
    name: 'P selectors should match querySelector* ordering',
    path: '/p-selectors.html',
    script: `${IDS} const lists = [['div', 'button', 'span'], ['div', 'span', 'button'], ['button', 'div', 'span'], ['button', 'span', 'div'], ['span', 'div', 'button'], ['span', 'button', 'div']]; const out = []; for (const list of lists) out.push((await ids(await page.$$(list.map((s) => (s === 'button' ? '::-p-text(world)' : s)).join(',')))).join()); return out;`,
  },
  {
    area: 'queryhandler',
    name: 'P selectors should not have duplicate elements from selector lists',
    path: '/p-selectors.html',
    script: `return (await page.$$('::-p-text(world), button')).length;`,
  },
  // ------------------------------------------------------------ ariaqueryhandler
  {
    area: 'ariaqueryhandler',
    name: 'parseAriaSelector should find button',
    script: `await page.setContent('<button id="btn" role="button"> Submit  button   and some spaces  </button>'); const selectors = ['aria/Submit button and some spaces[role="button"]', "aria/Submit button and some spaces[role='button']", 'aria/  Submit button and some spaces[role="button"]', 'aria/Submit button and some spaces  [role="button"]', 'aria/Submit  button   and  some  spaces   [  role  =  "button" ] ', 'aria/[role="button"]Submit button and some spaces', 'aria/Submit button [role="button"]and some spaces', 'aria/[name="  Submit  button and some  spaces"][role="button"]', "aria/[name='  Submit  button and some  spaces'][role='button']", 'aria/ignored[name="Submit  button and some  spaces"][role="button"]']; const found = []; for (const s of selectors) { const b = await page.$(s); found.push(b && (await b.evaluate((e) => e.id))); } const error = await page.$('aria/smth[smth="true"]').then(() => 'no error', (e) => e.message); return [found, error];`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'queryOne should find button by role',
    script: `await page.setContent('<div id="div"><button id="btn" role="button">Submit</button></div>'); const button = await page.$('aria/[role="button"]'); return await button.evaluate((b) => b.id);`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'queryOne should find button by name and role',
    script: `await page.setContent('<div id="div"><button id="btn" role="button">Submit</button></div>'); const button = await page.$('aria/Submit[role="button"]'); return await button.evaluate((b) => b.id);`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'queryOne should find first matching element',
    script: `await page.setContent('<div role="menu" id="mnu1" aria-label="menu div"></div><div role="menu" id="mnu2" aria-label="menu div"></div>'); const div = await page.$('aria/menu div'); return await div.evaluate((d) => d.id);`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'queryOne should find by name',
    script: `await page.setContent('<div role="menu" id="mnu1" aria-label="menu-label1">menu div</div><div role="menu" id="mnu2" aria-label="menu-label2">menu div</div>'); const a = await page.$('aria/menu-label1'); const b = await page.$('aria/menu-label2'); return [await a.evaluate((d) => d.id), await b.evaluate((d) => d.id)];`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'queryAll should find menu by name',
    script: `${IDS} await page.setContent('<div role="menu" id="mnu1" aria-label="menu div"></div><div role="menu" id="mnu2" aria-label="menu div"></div>'); return (await ids(await page.$$('aria/menu div'))).join(', ');`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'queryAllArray $$eval should handle many elements (100 here)',
    upstream: 'ariaqueryhandler: queryAllArray $$eval should handle many elements',
    // Puppeteer's test makes 10,001 buttons: on a loaded machine even 1,001 take seconds on either side, and the
    // answer would hang on the machine's speed against the 5 s script limit.
    script: `await page.setContent(''); await page.evaluate("for (var i = 0; i <= 100; i++) { const button = document.createElement('button'); button.textContent = i; document.body.appendChild(button); }"); return await page.$$eval('aria/[role="button"]', (buttons) => buttons.reduce((acc, button) => acc + Number(button.textContent), 0));`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should immediately resolve promise if node exists',
    script: `${ADD_ELEMENT} await page.evaluate(addElement, 'button'); const h = await page.waitForSelector('aria/[role="button"]'); return await h.evaluate((e) => e.tagName);`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should work for ElementHandle.waitForSelector',
    script: `await page.evaluate(() => (document.body.innerHTML = '<div><button>test</button></div>')); const element = await page.$('div'); const h = await element.waitForSelector('aria/test'); return await h.evaluate((e) => e.tagName);`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should persist query handler bindings across reloads',
    script: `${ADD_ELEMENT} await page.evaluate(addElement, 'button'); await page.waitForSelector('aria/[role="button"]'); await page.reload(); await page.evaluate(addElement, 'button'); const h = await page.waitForSelector('aria/[role="button"]'); return await h.evaluate((e) => e.tagName);`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should work independently of exposeFunction',
    upstream: 'ariaqueryhandler: waitForSelector (aria) should work independently of `exposeFunction`',
    script: `${ADD_ELEMENT} await page.exposeFunction('ariaQuerySelector', (a, b) => a + b); await page.evaluate(addElement, 'button'); await page.waitForSelector('aria/[role="button"]'); return await page.evaluate('globalThis.ariaQuerySelector(2,8)');`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should resolve promise when node is added',
    script: `${ADD_ELEMENT} const frame = page.mainFrame(); const watchdog = frame.waitForSelector('aria/[role="heading"]'); await frame.evaluate(addElement, 'br'); await frame.evaluate(addElement, 'h1'); const handle = await watchdog; return await (await handle.getProperty('tagName')).jsonValue();`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should return null if waiting to hide non-existing element',
    script: `return await page.waitForSelector('aria/non-existing', { hidden: true });`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should respect timeout',
    script: `return await page.waitForSelector('aria/[role="button"]', { timeout: 10 }).then(() => 'no error', (e) => [e.name, e.message.includes('Waiting for selector \`[role="button"]\` failed')]);`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) hidden should wait for removal',
    script: `await page.setContent("<div role='main'>text</div>"); let divRemoved = false; const waitForSelector = page.waitForSelector('aria/[role="main"]', { hidden: true }).then(() => (divRemoved = true)); await page.waitForSelector('aria/[role="main"]'); const before = divRemoved; await page.evaluate(() => document.querySelector('div').remove()); return [before, await waitForSelector, divRemoved];`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should respond to node attribute mutation',
    script: `let divFound = false; const waitForSelector = page.waitForSelector('aria/zombo').then(() => (divFound = true)); await page.setContent("<div aria-label='notZombo'></div>"); const before = divFound; await page.evaluate(() => document.querySelector('div').setAttribute('aria-label', 'zombo')); return [before, await waitForSelector];`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should return the element handle',
    script: `const waitForSelector = page.waitForSelector('aria/zombo'); await page.setContent("<div aria-label='zombo'>anything</div>"); return await page.evaluate((x) => x?.textContent, await waitForSelector);`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'queryOne (Chromium web test) should find by name "foo"',
    script: `${SET_ARIA} ${IDS} return await ids(await page.$$('aria/foo'));`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'queryOne (Chromium web test) should find by name "bar"',
    script: `${SET_ARIA} ${IDS} return await ids(await page.$$('aria/bar'));`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'queryOne (Chromium web test) should find treeitem by name',
    script: `${SET_ARIA} ${IDS} return await ids(await page.$$('aria/item1 item2 item3'));`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'queryOne (Chromium web test) should find by role "button"',
    script: `${SET_ARIA} ${IDS} return await ids(await page.$$('aria/[role="button"]'));`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'queryOne (Chromium web test) should find by role "heading"',
    script: `${SET_ARIA} ${IDS} return await ids(await page.$$('aria/[role="heading"]'));`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'queryOne (Chromium web test) should find both ignored and unignored',
    script: `${SET_ARIA} ${IDS} return await ids(await page.$$('aria/title'));`,
  },
];
