// After puppeteer/puppeteer test/src/*.spec.ts (Apache-2.0): the upstream tests translated
// for the pinned lists of upstream/ (issue 37), each named with its upstream id. Helpers the
// tests import (attachFrame, detachFrame, createTimeout) are written out in the script.
import type { Case } from '../harness.js';

export const cases: Case[] = [
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should work when resolved right before execution context disposal',
    script: `await page.evaluateOnNewDocument(() => (globalThis.__RELOADED = true)); await page.waitForFunction(() => { if (!globalThis.__RELOADED) { window.location.reload(); return false; } return true; }); return 'ok';`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should poll on interval',
    script: `const t0 = Date.now(); const w = page.waitForFunction(() => globalThis.__FOO === 'hit', { polling: 100 }); await page.evaluate(() => { setTimeout(() => { globalThis.__FOO = 'hit'; }, 50); }); await w; return Date.now() - t0 >= 50;`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should poll on mutation',
    script: `let success = false; const w = page.waitForFunction(() => globalThis.__FOO === 'hit', { polling: 'mutation' }).then(() => (success = true)); await page.evaluate(() => (globalThis.__FOO = 'hit')); const before = success; await page.evaluate(() => document.body.appendChild(document.createElement('div'))); await w; return [before, success];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should poll on mutation async',
    script: `let success = false; const w = page.waitForFunction(async () => globalThis.__FOO === 'hit', { polling: 'mutation' }).then(() => (success = true)); await page.evaluate(async () => (globalThis.__FOO = 'hit')); const before = success; await page.evaluate(async () => document.body.appendChild(document.createElement('div'))); await w; return [before, success];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should poll on raf',
    script: `const w = page.waitForFunction(() => globalThis.__FOO === 'hit', { polling: 'raf' }); await page.evaluate(() => (globalThis.__FOO = 'hit')); await w; return 'ok';`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should poll on raf async',
    script: `const w = page.waitForFunction(async () => globalThis.__FOO === 'hit', { polling: 'raf' }); await page.evaluate(async () => (globalThis.__FOO = 'hit')); await w; return 'ok';`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should return the success value as a JSHandle',
    script: `return await (await page.waitForFunction(() => 5)).jsonValue();`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should return the window as a success value',
    script: `return !!(await page.waitForFunction(() => window));`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should accept ElementHandle arguments',
    script: `await page.setContent('<div></div>'); const div = await page.$('div'); let resolved = false; const w = page.waitForFunction((e) => e.localName === 'div' && !e.parentElement, {}, div).then(() => (resolved = true)); const before = resolved; await page.evaluate((e) => e.remove(), div); await w; return [before, resolved];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should respect timeout',
    script: `try { await page.waitForFunction(() => false, { timeout: 10 }); return 'no error'; } catch (e) { return [e.name, e.message]; }`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should disable timeout when its set to 0',
    script: `const w = page.waitForFunction(() => { globalThis.__counter = (globalThis.__counter || 0) + 1; return globalThis.__injected; }, { timeout: 0, polling: 10 }); await page.waitForFunction(() => globalThis.__counter > 10); await page.evaluate(() => (globalThis.__injected = true)); await w; return 'ok';`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should survive cross-process navigation',
    script: `let found = false; const w = page.waitForFunction(() => globalThis.__FOO === 1).then(() => (found = true)); await page.goto(server.EMPTY_PAGE); const a = found; await page.reload(); const b = found; await page.goto(server.CROSS_PROCESS_PREFIX + '/grid.html'); const d = found; await page.evaluate(() => (globalThis.__FOO = 1)); await w; return [a, b, d, found];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should survive navigations',
    script: `const w = page.waitForFunction(() => globalThis.__done); await page.goto(server.EMPTY_PAGE); await page.goto(server.PREFIX + '/consolelog.html'); await page.evaluate(() => (globalThis.__done = true)); await w; return 'ok';`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should work with removed MutationObserver',
    script: `await page.evaluate(() => delete window.MutationObserver); const [h] = await Promise.all([page.waitForSelector('.zombo'), page.setContent("<div class='zombo'>anything</div>")]); return await page.evaluate((x) => x.textContent, h);`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should work when node is added through innerHTML',
    script: `const addElement = (tag) => document.body.appendChild(document.createElement(tag)); const w = page.waitForSelector('h3 div'); await page.evaluate(addElement, 'span'); await page.evaluate(() => (document.querySelector('span').innerHTML = '<h3><div></div></h3>')); await w; return 'ok';`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector Page.waitForSelector is shortcut for main frame',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; const addElement = (tag) => document.body.appendChild(document.createElement(tag)); await attachFrame('frame1', server.EMPTY_PAGE); const other = page.frames()[1]; const w = page.waitForSelector('div'); await other.evaluate(addElement, 'div'); await page.evaluate(addElement, 'div'); const h = await w; return h.frame === page.mainFrame();`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should run in specified frame',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; const addElement = (tag) => document.body.appendChild(document.createElement(tag)); await attachFrame('frame1', server.EMPTY_PAGE); await attachFrame('frame2', server.EMPTY_PAGE); const f1 = page.frames()[1]; const f2 = page.frames()[2]; const w = f2.waitForSelector('div'); await f1.evaluate(addElement, 'div'); await f2.evaluate(addElement, 'div'); const h = await w; return h.frame === f2;`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should throw when frame is detached',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; const detachFrame = (id) => page.evaluate((id) => document.getElementById(id).remove(), id); await attachFrame('frame1', server.EMPTY_PAGE); const frame = page.frames()[1]; let err; const w = frame.waitForSelector('.box').catch((e) => (err = e)); await detachFrame('frame1'); await w; return err.message;`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should survive cross-process navigation',
    script: `let found = false; const w = page.waitForSelector('.box').then(() => (found = true)); await page.goto(server.EMPTY_PAGE); const a = found; await page.reload(); const b = found; await page.goto(server.CROSS_PROCESS_PREFIX + '/grid.html'); await w; return [a, b, found];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should wait for element to be visible (display)',
    script: `const sleep = (ms) => new Promise((r) => setTimeout(r, ms)); const race = (p) => Promise.race([p.then(() => true), sleep(40).then(() => false)]); const p = page.waitForSelector('div', { visible: true }); await page.setContent('<div style="display: none">text</div>'); const el = await page.evaluateHandle(() => document.getElementsByTagName('div')[0]); const a = await race(p); await el.evaluate((e) => e.style.removeProperty('display')); return [a, !!(await p)];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should wait for element to be visible (visibility)',
    script: `const sleep = (ms) => new Promise((r) => setTimeout(r, ms)); const race = (p) => Promise.race([p.then(() => true), sleep(40).then(() => false)]); const p = page.waitForSelector('div', { visible: true }); await page.setContent('<div style="visibility: hidden">text</div>'); const el = await page.evaluateHandle(() => document.getElementsByTagName('div')[0]); const a = await race(p); await el.evaluate((e) => e.style.setProperty('visibility', 'collapse')); const b = await race(p); await el.evaluate((e) => e.style.removeProperty('visibility')); return [a, b, !!(await p)];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should wait for element to be visible (bounding box)',
    script: `const sleep = (ms) => new Promise((r) => setTimeout(r, ms)); const race = (p) => Promise.race([p.then(() => true), sleep(40).then(() => false)]); const p = page.waitForSelector('div', { visible: true }); await page.setContent('<div style="width: 0">text</div>'); const el = await page.evaluateHandle(() => document.getElementsByTagName('div')[0]); const a = await race(p); await el.evaluate((e) => { e.style.setProperty('height', '0'); e.style.removeProperty('width'); }); const b = await race(p); await el.evaluate((e) => e.style.removeProperty('height')); return [a, b, !!(await p)];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should wait for element to be visible recursively',
    script: `const sleep = (ms) => new Promise((r) => setTimeout(r, ms)); const race = (p) => Promise.race([p.then(() => true), sleep(40).then(() => false)]); const p = page.waitForSelector('div#inner', { visible: true }); await page.setContent(\`<div style='display: none; visibility: hidden;'><div id="inner">hi</div></div>\`); const el = await page.evaluateHandle(() => document.getElementsByTagName('div')[0]); const a = await race(p); await el.evaluate((e) => e.style.removeProperty('display')); const b = await race(p); await el.evaluate((e) => e.style.removeProperty('visibility')); return [a, b, !!(await p)];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should wait for element to be hidden (visibility)',
    script: `const sleep = (ms) => new Promise((r) => setTimeout(r, ms)); const race = (p) => Promise.race([p.then(() => true), sleep(40).then(() => false)]); const p = page.waitForSelector('div', { hidden: true }); await page.setContent("<div style='display: block;'>text</div>"); const el = await page.evaluateHandle(() => document.getElementsByTagName('div')[0]); const a = await race(p); await el.evaluate((e) => e.style.setProperty('visibility', 'hidden')); return [a, !!(await p)];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should wait for element to be hidden (display)',
    script: `const sleep = (ms) => new Promise((r) => setTimeout(r, ms)); const race = (p) => Promise.race([p.then(() => true), sleep(40).then(() => false)]); const p = page.waitForSelector('div', { hidden: true }); await page.setContent("<div style='display: block;'>text</div>"); const el = await page.evaluateHandle(() => document.getElementsByTagName('div')[0]); const a = await race(p); await el.evaluate((e) => e.style.setProperty('display', 'none')); return [a, !!(await p)];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should wait for element to be hidden (bounding box)',
    script: `const sleep = (ms) => new Promise((r) => setTimeout(r, ms)); const race = (p) => Promise.race([p.then(() => true), sleep(40).then(() => false)]); const p = page.waitForSelector('div', { hidden: true }); await page.setContent("<div>text</div>"); const el = await page.evaluateHandle(() => document.getElementsByTagName('div')[0]); const a = await race(p); await el.evaluate((e) => e.style.setProperty('height', '0')); return [a, !!(await p)];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should wait for element to be hidden (removal)',
    script: `const sleep = (ms) => new Promise((r) => setTimeout(r, ms)); const race = (p) => Promise.race([p.then(() => true), sleep(40).then(() => false)]); const p = page.waitForSelector('div', { hidden: true }); await page.setContent('<div>text</div>'); const el = await page.evaluateHandle(() => document.getElementsByTagName('div')[0]); const a = await Promise.race([p.then(() => false), sleep(40).then(() => true)]); await el.evaluate((e) => e.remove()); return [a, await p];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should return null if waiting to hide non-existing element',
    script: `return await page.waitForSelector('non-existing', { hidden: true });`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should have an error message specifically for awaiting an element to be hidden',
    script: `await page.setContent('<div>text</div>'); try { await page.waitForSelector('div', { hidden: true, timeout: 10 }); return 'no error'; } catch (e) { return [e.name, e.message]; }`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should respond to node attribute mutation',
    script: `let found = false; const w = page.waitForSelector('.zombo').then(() => (found = true)); await page.setContent("<div class='notZombo'></div>"); const a = found; await page.evaluate(() => (document.querySelector('div').className = 'zombo')); return [a, await w];`,
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should return the element handle',
    script: `const w = page.waitForSelector('.zombo'); await page.setContent("<div class='zombo'>anything</div>"); return await page.evaluate((x) => x.textContent, await w);`,
  },
  {
    area: 'jshandle',
    name: 'Page.evaluateHandle should accept object handle as an argument',
    script: `const h = await page.evaluateHandle(() => navigator); return (await page.evaluate((e) => e.userAgent, h)).includes('Mozilla');`,
  },
  {
    area: 'jshandle',
    name: 'Page.evaluateHandle should accept object handle to primitive types',
    script: `const h = await page.evaluateHandle(() => 5); return await page.evaluate((e) => Object.is(e, 5), h);`,
  },
  {
    area: 'jshandle',
    name: 'Page.evaluateHandle should accept object handle to unserializable value',
    script: `const h = await page.evaluateHandle(() => Infinity); return await page.evaluate((e) => Object.is(e, Infinity), h);`,
  },
  {
    area: 'jshandle',
    name: 'Page.evaluateHandle should use the same JS wrappers',
    script: `const h = await page.evaluateHandle(() => { globalThis.FOO = 123; return window; }); return await page.evaluate((e) => e.FOO, h);`,
  },
  {
    area: 'jshandle',
    name: 'JSHandle.jsonValue works with jsonValues that are not objects',
    script: `return await (await page.evaluateHandle(() => ['a', 'b'])).jsonValue();`,
  },
  {
    area: 'jshandle',
    name: 'JSHandle.jsonValue works with jsonValues that are primitives',
    script: `const a = await (await page.evaluateHandle(() => 'foo')).jsonValue(); const b = await (await page.evaluateHandle(() => undefined)).jsonValue(); return [a, b === undefined];`,
  },
  {
    area: 'jshandle',
    name: 'JSHandle.jsonValue should not throw for circular objects',
    script: `const h = await page.evaluateHandle(() => { const t = { g: 1 }; t.t = t; return t; }); await h.jsonValue(); return 'ok';`,
  },
  {
    area: 'jshandle',
    name: 'JSHandle.getProperties should return even non-own properties',
    script: `const h = await page.evaluateHandle(() => { class A { constructor() { this.a = '1'; } } class B extends A { constructor() { super(); this.b = '2'; } } return new B(); }); const p = await h.getProperties(); return [await p.get('a').jsonValue(), await p.get('b').jsonValue()];`,
  },
  {
    area: 'jshandle',
    name: 'JSHandle.asElement should return ElementHandle for TextNodes',
    script: `await page.setContent('<div>ee!</div>'); const h = await page.evaluateHandle(() => document.querySelector('div').firstChild); const el = h.asElement(); return [!!el, await page.evaluate((e) => e.nodeType === Node.TEXT_NODE, el)];`,
  },
  {
    area: 'jshandle',
    name: 'JSHandle.toString should work with different subtypes',
    script: `const out = []; for (const s of ['(function(){})', '12', 'true', 'undefined', '"foo"', 'Symbol()', 'new Map()', 'new Set()', '[]', 'null', '/foo/', 'document.body', 'new Date()', 'new WeakMap()', 'new WeakSet()', 'new Error()', 'new Int32Array()', 'new Proxy({}, {})']) out.push((await page.evaluateHandle(s)).toString()); return out;`,
  },
  {
    area: 'evaluation',
    name: 'Page.evaluate should accept "null" as one of multiple parameters',
    script: `return await page.evaluate((a, b) => Object.is(a, null) && Object.is(b, 'foo'), null, 'foo');`,
  },
  {
    area: 'evaluation',
    name: 'Page.evaluate should return promise as empty object',
    script: `return await page.evaluate(() => ({ promise: new Promise((resolve) => setTimeout(resolve, 1000)) }));`,
  },
  {
    area: 'evaluation',
    name: 'Page.evaluate should throw if elementHandles are from other frames',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; await attachFrame('frame1', server.EMPTY_PAGE); const body = await page.frames()[1].$('body'); try { await page.evaluate((b) => b.innerHTML, body); return 'no error'; } catch (e) { return e.message.includes('JSHandles can be evaluated only in the context they were created'); }`,
  },
  {
    area: 'evaluation',
    name: 'Page.evaluate should return properly serialize objects with unknown type fields',
    script: `await page.setContent("<img src='data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='>"); const r = await page.evaluate(async () => { const image = document.querySelector('img'); const imageBitmap = await createImageBitmap(image); return { a: 'foo', b: imageBitmap }; }); return [r.a, r.b === undefined];`,
  },
  {
    area: 'evaluation',
    name: 'Frame.evaluate should have different execution contexts',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; await page.goto(server.EMPTY_PAGE); await attachFrame('frame1', server.EMPTY_PAGE); await page.frames()[0].evaluate(() => (globalThis.FOO = 'foo')); await page.frames()[1].evaluate(() => (globalThis.FOO = 'bar')); return [page.frames().length, await page.frames()[0].evaluate(() => globalThis.FOO), await page.frames()[1].evaluate(() => globalThis.FOO)];`,
  },
  {
    area: 'evaluation',
    name: 'Frame.evaluate should execute after cross-site navigation',
    script: `await page.goto(server.EMPTY_PAGE); const main = page.mainFrame(); const a = await main.evaluate(() => window.location.href); await page.goto(server.CROSS_PROCESS_PREFIX + '/empty.html'); const b = await main.evaluate(() => window.location.href); return [a.startsWith(server.PREFIX), b.startsWith(server.CROSS_PROCESS_PREFIX)];`,
  },
  {
    area: 'frame',
    name: 'Frame.evaluateHandle should work',
    script: `await page.goto(server.EMPTY_PAGE); const h = await page.mainFrame().evaluateHandle(() => window); return !!h;`,
  },
  {
    area: 'frame',
    name: 'Frame.evaluate should throw for detached frames',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; const detachFrame = (id) => page.evaluate((id) => document.getElementById(id).remove(), id); const frame1 = await attachFrame('frame1', server.EMPTY_PAGE); await detachFrame('frame1'); try { await frame1.evaluate(() => 7 * 8); return 'no error'; } catch (e) { return e.message.includes('Attempted to use detached Frame'); }`,
  },
  {
    area: 'frame',
    name: 'Frame.evaluate allows readonly array to be an argument',
    script: `await page.goto(server.EMPTY_PAGE); return await page.mainFrame().evaluate((arr) => arr, ['a', 'b', 'c']);`,
  },
  {
    area: 'frame',
    name: 'Frame.page should retrieve the page from a frame',
    script: `await page.goto(server.EMPTY_PAGE); return page.mainFrame().page() === page;`,
  },
  {
    area: 'frame',
    name: 'Frame Management should send "framenavigated" when navigating on anchor URLs',
    script: `await page.goto(server.EMPTY_PAGE); await Promise.all([page.goto(server.EMPTY_PAGE + '#foo'), new Promise((r) => page.once('framenavigated', r))]); return page.url() === server.EMPTY_PAGE + '#foo';`,
  },
  {
    area: 'frame',
    name: 'Frame Management should persist mainFrame on cross-process navigation',
    script: `await page.goto(server.EMPTY_PAGE); const main = page.mainFrame(); await page.goto(server.CROSS_PROCESS_PREFIX + '/empty.html'); return page.mainFrame() === main;`,
  },
  {
    area: 'frame',
    name: 'Frame Management should not send attach/detach events for main frame',
    script: `let hasEvents = false; page.on('frameattached', () => (hasEvents = true)); page.on('framedetached', () => (hasEvents = true)); await page.goto(server.EMPTY_PAGE); return hasEvents;`,
  },
  {
    area: 'frame',
    name: 'Frame Management should detach child frames on navigation',
    script: `let a = 0, d = 0, n = 0; page.on('frameattached', () => a++); page.on('framedetached', () => d++); page.on('framenavigated', () => n++); await page.goto(server.PREFIX + '/frames/nested-frames.html'); const first = [a, d, n]; a = d = n = 0; await page.goto(server.EMPTY_PAGE); return [first, [a, d, n]];`,
  },
  {
    area: 'frame',
    name: 'Frame Management should report frame.name()',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; await attachFrame('theFrameId', server.EMPTY_PAGE); await page.evaluate((url) => { const frame = document.createElement('iframe'); frame.name = 'theFrameName'; frame.src = url; document.body.appendChild(frame); return new Promise((x) => (frame.onload = x)); }, server.EMPTY_PAGE); return page.frames().map((f) => f.name());`,
  },
  {
    area: 'frame',
    name: 'Frame Management should report frame.parent()',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; await attachFrame('frame1', server.EMPTY_PAGE); await attachFrame('frame2', server.EMPTY_PAGE); return [page.frames()[0].parentFrame(), page.frames()[1].parentFrame() === page.mainFrame(), page.frames()[2].parentFrame() === page.mainFrame()];`,
  },
  {
    area: 'frame',
    name: 'Frame Management should report different frame instance when frame re-attaches',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; const frame1 = await attachFrame('frame1', server.EMPTY_PAGE); await page.evaluate(() => { globalThis.frame = document.querySelector('#frame1'); globalThis.frame.remove(); }); const a = frame1.isDetached(); const [frame2] = await Promise.all([new Promise((r) => page.once('frameattached', r)), page.evaluate(() => document.body.appendChild(globalThis.frame))]); return [a, frame2.isDetached(), frame1 !== frame2];`,
  },
  {
    area: 'page',
    name: 'Page.Events.Load should fire when expected',
    script: `await Promise.all([new Promise((r) => page.once('load', r)), page.goto('about:blank')]); return 'ok';`,
  },
  {
    area: 'page',
    name: 'Page.Events.DOMContentLoaded should fire when expected',
    script: `await Promise.all([new Promise((r) => page.once('domcontentloaded', r)), page.goto('about:blank')]); return 'ok';`,
  },
  {
    area: 'page',
    name: 'removing and adding event handlers should correctly fire event handlers as they are added and then removed',
    script: `const isFavicon = (r) => r.url().includes('favicon'); let count = 0; const onResponse = (r) => { if (!isFavicon(r)) count++; }; page.on('response', onResponse); await page.goto(server.EMPTY_PAGE); const a = count; page.off('response', onResponse); await page.goto(server.EMPTY_PAGE); const b = count; page.on('response', onResponse); await page.goto(server.EMPTY_PAGE); return [a, b, count];`,
  },
  {
    area: 'page',
    name: 'removing and adding event handlers should correctly added and removed request events',
    script: `const isFavicon = (r) => r.url().includes('favicon'); let count = 0; const onRequest = (r) => { if (!isFavicon(r)) count++; }; page.on('request', onRequest); page.on('request', onRequest); await page.goto(server.EMPTY_PAGE); const a = count; page.off('request', onRequest); await page.goto(server.EMPTY_PAGE); const b = count; page.off('request', onRequest); await page.goto(server.EMPTY_PAGE); const d = count; page.on('request', onRequest); await page.goto(server.EMPTY_PAGE); return [a, b, d, count];`,
  },
  {
    area: 'page',
    name: 'Page.setOfflineMode should emulate navigator.onLine',
    script: `const a = await page.evaluate(() => window.navigator.onLine); await page.setOfflineMode(true); const b = await page.evaluate(() => window.navigator.onLine); await page.setOfflineMode(false); return [a, b, await page.evaluate(() => window.navigator.onLine)];`,
  },
  {
    area: 'page',
    name: 'Page.metrics should get metrics from a page',
    script: `await page.goto('about:blank'); const m = await page.metrics(); return [Object.keys(m).sort(), Object.values(m).every((v) => v >= 0)];`,
  },
  {
    area: 'page',
    name: 'Page.waitForRequest should work with predicate',
    script: `await page.goto(server.EMPTY_PAGE); const [r] = await Promise.all([page.waitForRequest((r) => r.url() === server.PREFIX + '/digits/2.png'), page.evaluate(() => { void fetch('/digits/1.png'); void fetch('/digits/2.png'); void fetch('/digits/3.png'); })]); return r.url() === server.PREFIX + '/digits/2.png';`,
  },
  {
    area: 'page',
    name: 'Page.waitForRequest should work with async predicate',
    script: `await page.goto(server.EMPTY_PAGE); const [r] = await Promise.all([page.waitForRequest(async (r) => r.url() === server.PREFIX + '/digits/2.png'), page.evaluate(() => { void fetch('/digits/1.png'); void fetch('/digits/2.png'); void fetch('/digits/3.png'); })]); return r.url() === server.PREFIX + '/digits/2.png';`,
  },
  {
    area: 'page',
    name: 'Page.waitForResponse should work with async predicate',
    script: `await page.goto(server.EMPTY_PAGE); const [r] = await Promise.all([page.waitForResponse(async (r) => r.url() === server.PREFIX + '/digits/2.png'), page.evaluate(() => { void fetch('/digits/1.png'); void fetch('/digits/2.png'); void fetch('/digits/3.png'); })]); return r.url() === server.PREFIX + '/digits/2.png';`,
  },
  {
    area: 'page',
    name: 'Page.waitForResponse should work',
    script: `await page.goto(server.EMPTY_PAGE); const [r] = await Promise.all([page.waitForResponse(server.PREFIX + '/digits/2.png'), page.evaluate(() => { void fetch('/digits/1.png'); void fetch('/digits/2.png'); void fetch('/digits/3.png'); })]); return r.url() === server.PREFIX + '/digits/2.png';`,
  },
  {
    area: 'page',
    name: 'Page.waitForRequest should respect timeout',
    script: `try { await page.waitForRequest(() => false, { timeout: 1 }); return 'no error'; } catch (e) { return e.name; }`,
  },
  {
    area: 'page',
    name: 'Page.waitForRequest should work with no timeout',
    script: `await page.goto(server.EMPTY_PAGE); const [r] = await Promise.all([page.waitForRequest(server.PREFIX + '/digits/2.png', { timeout: 0 }), page.evaluate(() => setTimeout(() => { void fetch('/digits/1.png'); void fetch('/digits/2.png'); void fetch('/digits/3.png'); }, 50))]); return r.url() === server.PREFIX + '/digits/2.png';`,
  },
  {
    area: 'page',
    name: 'Page.waitForResponse should respect timeout',
    script: `try { await page.waitForResponse(() => false, { timeout: 1 }); return 'no error'; } catch (e) { return e.name; }`,
  },
  {
    area: 'page',
    name: 'Page.waitForResponse should work with no timeout',
    script: `await page.goto(server.EMPTY_PAGE); const [r] = await Promise.all([page.waitForResponse(server.PREFIX + '/digits/2.png', { timeout: 0 }), page.evaluate(() => setTimeout(() => { void fetch('/digits/1.png'); void fetch('/digits/2.png'); void fetch('/digits/3.png'); }, 50))]); return r.url() === server.PREFIX + '/digits/2.png';`,
  },
  {
    area: 'page',
    name: 'Page.waitForNetworkIdle should respect timeout',
    script: `try { await page.waitForNetworkIdle({ timeout: 1 }); return 'no error'; } catch (e) { return e.name; }`,
  },
  {
    area: 'page',
    name: 'Page.waitForNetworkIdle should work with no timeout',
    script: `await page.goto(server.EMPTY_PAGE); const [r] = await Promise.all([page.waitForNetworkIdle({ timeout: 0 }), page.evaluate(() => setTimeout(() => { void fetch('/digits/1.png'); void fetch('/digits/2.png'); void fetch('/digits/3.png'); }, 50))]); return r === undefined;`,
  },
  {
    area: 'page',
    name: 'Page.waitForFrame should work with a URL predicate',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; await page.goto(server.EMPTY_PAGE); const [f] = await Promise.all([page.waitForFrame(server.PREFIX + '/title.html'), attachFrame('frame2', server.PREFIX + '/title.html')]); return f.parentFrame() === page.mainFrame();`,
  },
  {
    area: 'page',
    name: 'Page.exposeFunction should be callable from-inside evaluateOnNewDocument',
    script: `let resolve; const called = new Promise((r) => (resolve = r)); await page.exposeFunction('woof', () => { resolve(); }); await page.evaluateOnNewDocument(() => globalThis.woof()); await page.reload(); await called; return 'ok';`,
  },
  {
    area: 'page',
    name: 'Page.exposeFunction should survive navigation',
    script: `await page.exposeFunction('compute', (a, b) => a * b); await page.goto(server.EMPTY_PAGE); return await page.evaluate(async () => globalThis.compute(9, 4));`,
  },
  {
    area: 'page',
    name: 'Page.exposeFunction should await returned promise',
    script: `await page.exposeFunction('compute', (a, b) => Promise.resolve(a * b)); return await page.evaluate(async () => globalThis.compute(3, 5));`,
  },
  {
    area: 'page',
    name: 'Page.exposeFunction should await returned if called from function',
    script: `await page.exposeFunction('compute', (a, b) => Promise.resolve(a * b)); return await page.evaluate(async () => { const result = await globalThis.compute(3, 5); return result; });`,
  },
  {
    area: 'page',
    name: 'Page.exposeFunction should work on frames',
    script: `await page.exposeFunction('compute', (a, b) => Promise.resolve(a * b)); await page.goto(server.PREFIX + '/frames/nested-frames.html'); return await page.frames()[1].evaluate(async () => globalThis.compute(3, 5));`,
  },
  {
    area: 'page',
    name: 'Page.exposeFunction should work on frames before navigation',
    script: `await page.goto(server.PREFIX + '/frames/nested-frames.html'); await page.exposeFunction('compute', (a, b) => Promise.resolve(a * b)); return await page.frames()[1].evaluate(async () => globalThis.compute(3, 5));`,
  },
  {
    area: 'page',
    name: 'Page.exposeFunction should not throw when frames detach',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; const detachFrame = (id) => page.evaluate((id) => document.getElementById(id).remove(), id); await page.goto(server.EMPTY_PAGE); await attachFrame('frame1', server.EMPTY_PAGE); await page.exposeFunction('compute', (a, b) => Promise.resolve(a * b)); await detachFrame('frame1'); return await page.evaluate(async () => globalThis.compute(3, 5));`,
  },
  {
    area: 'page',
    name: 'Page.exposeFunction should work with complex objects',
    script: `await page.exposeFunction('complexObject', (a, b) => ({ x: a.x + b.x })); const r = await page.evaluate(async () => globalThis.complexObject({ x: 5 }, { x: 2 })); return r.x;`,
  },
  {
    area: 'page',
    name: 'Page.exposeFunction should be called once',
    script: `await page.goto(server.PREFIX + '/frames/nested-frames.html'); let calls = 0; await page.exposeFunction('call', () => { calls++; }); await page.frames()[1].evaluate(async () => globalThis.call()); return calls;`,
  },
  {
    area: 'page',
    name: 'Page.setUserAgent should work for subframes',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; await page.setUserAgent('foobar'); const f = await attachFrame('frame1', server.PREFIX + '/headers.json'); return JSON.parse(await f.evaluate(() => document.body.textContent)).ua;`,
  },
  {
    area: 'page',
    name: 'Page.setUserAgent should emulate device user-agent',
    script: `await page.goto(server.PREFIX + '/mobile.html'); const a = await page.evaluate(() => navigator.userAgent); await page.setUserAgent(KnownDevices['iPhone 6'].userAgent); return [a.includes('iPhone'), (await page.evaluate(() => navigator.userAgent)).includes('iPhone')];`,
  },
  {
    area: 'page',
    name: 'Page.setUserAgent should restore original',
    script: `const ua = await page.evaluate(() => navigator.userAgent); await page.setUserAgent('foobar'); await page.goto(server.PREFIX + '/headers.json'); const a = JSON.parse(await page.evaluate(() => document.body.textContent)).ua; await page.setUserAgent(''); await page.goto(server.PREFIX + '/headers.json'); const b = JSON.parse(await page.evaluate(() => document.body.textContent)).ua; return [a, b === ua, (await page.evaluate(() => navigator.userAgent)) === ua];`,
  },
  {
    area: 'page',
    name: 'Page.setContent should work with HTML 4 doctype',
    script: `const doctype = '<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">'; await page.setContent(doctype + '<div>hello</div>'); return await page.content();`,
  },
  {
    area: 'page',
    name: 'Page.setContent should work fast enough',
    script: `for (let i = 0; i < 20; ++i) await page.setContent('<div>yo</div>'); return 'ok';`,
  },
  {
    area: 'page',
    name: 'Page.setContent should work with tricky content',
    script: `await page.setContent('<div>hello world</div>' + '\\x7F'); return await page.$eval('div', (div) => div.textContent);`,
  },
  {
    area: 'page',
    name: 'Page.setContent should work with comments outside HTML tag',
    script: `await page.setContent('<!-- Comment --><div>hello</div>'); return await page.content();`,
  },
  {
    area: 'page',
    name: 'Page.addScriptTag should work with a url',
    script: `await page.goto(server.EMPTY_PAGE); const h = await page.addScriptTag({ url: '/injectedfile.js' }); return [h.asElement() !== null, await page.evaluate(() => globalThis.__injected)];`,
  },
  {
    area: 'page',
    name: 'Page.addScriptTag should throw an error if loading from url fail',
    script: `await page.goto(server.EMPTY_PAGE); try { await page.addScriptTag({ url: '/nonexistfile.js' }); return 'no error'; } catch (e) { return e.message.includes('Could not load script'); }`,
  },
  {
    area: 'page',
    name: 'Page.addScriptTag should add id when provided',
    script: `await page.goto(server.EMPTY_PAGE); await page.addScriptTag({ content: 'window.__injected = 1;', id: 'one' }); await page.addScriptTag({ url: '/injectedfile.js', id: 'two' }); return [(await page.$('#one')) !== null, (await page.$('#two')) !== null];`,
  },
  {
    area: 'page',
    name: 'Page.addStyleTag should work with a url',
    script: `await page.goto(server.EMPTY_PAGE); const h = await page.addStyleTag({ url: '/injectedstyle.css' }); return [h.asElement() !== null, await page.evaluate(\`window.getComputedStyle(document.querySelector('body')).getPropertyValue('background-color')\`)];`,
  },
  {
    area: 'page',
    name: 'Page.addStyleTag should throw an error if loading from url fail',
    script: `await page.goto(server.EMPTY_PAGE); try { await page.addStyleTag({ url: '/nonexistfile.js' }); return 'no error'; } catch (e) { return e.message.includes('Could not load style'); }`,
  },
  {
    area: 'page',
    name: 'Page.select should select only first option',
    path: '/input/select.html',
    script: `const result = () => page.evaluate(() => [globalThis.result.onInput, globalThis.result.onChange]); await page.select('select', 'blue', 'green', 'red'); return await result();`,
  },
  {
    area: 'page',
    name: 'Page.select should not throw when select causes navigation',
    path: '/input/select.html',
    script: `await page.$eval('select', (select) => select.addEventListener('input', () => (window.location = '/empty.html'))); await Promise.all([page.select('select', 'blue'), page.waitForNavigation()]); return page.url().includes('empty.html');`,
  },
  {
    area: 'page',
    name: 'Page.select should throw when element is not a <select>',
    path: '/input/select.html',
    script: `try { await page.select('body', ''); return 'no error'; } catch (e) { return e.message.includes('Element is not a <select> element.'); }`,
  },
  {
    area: 'page',
    name: 'Page.select should return an array of matched values',
    path: '/input/select.html',
    script: `await page.evaluate(() => globalThis.makeMultiple()); const r = await page.select('select', 'blue', 'black', 'magenta'); return r.reduce((acc, cur) => ['blue', 'black', 'magenta'].includes(cur) && acc, true);`,
  },
  {
    area: 'page',
    name: 'Page.select should return an array of one element when multiple is not set',
    path: '/input/select.html',
    script: `return (await page.select('select', '42', 'blue', 'black', 'magenta')).length;`,
  },
  {
    area: 'page',
    name: 'Page.select should return [] on no values',
    path: '/input/select.html',
    script: `return await page.select('select');`,
  },
  {
    area: 'page',
    name: 'Page.select should deselect all options when passed no values for a multiple select',
    path: '/input/select.html',
    script: `await page.evaluate(() => globalThis.makeMultiple()); await page.select('select', 'blue', 'black', 'magenta'); await page.select('select'); return await page.$eval('select', (s) => Array.from(s.options).every((o) => !o.selected));`,
  },
  {
    area: 'page',
    name: 'Page.select should deselect all options when passed no values for a select without multiple',
    path: '/input/select.html',
    script: `await page.select('select', 'blue', 'black', 'magenta'); await page.select('select'); return await page.$eval('select', (s) => Array.from(s.options).filter((o) => o.selected)[0].value);`,
  },
  {
    area: 'page',
    name: 'Page.select should work when re-defining top-level Event class',
    path: '/input/select.html',
    script: `const result = () => page.evaluate(() => [globalThis.result.onInput, globalThis.result.onChange]); await page.evaluate(() => (window.Event = undefined)); await page.select('select', 'blue'); return await result();`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should navigate to empty page with domcontentloaded',
    script: `const r = await page.goto(server.EMPTY_PAGE, { waitUntil: 'domcontentloaded' }); return r.status();`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should navigate to empty page with networkidle0',
    script: `const r = await page.goto(server.EMPTY_PAGE, { waitUntil: 'networkidle0' }); return r.status();`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should navigate to page with iframe and networkidle0',
    script: `const r = await page.goto(server.PREFIX + '/frames/one-frame.html', { waitUntil: 'networkidle0' }); return r.status();`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should navigate to empty page with networkidle2',
    script: `const r = await page.goto(server.EMPTY_PAGE, { waitUntil: 'networkidle2' }); return r.status();`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should return response when page changes its URL after load',
    script: `const r = await page.goto(server.PREFIX + '/historyapi.html'); return r.status();`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should work when page calls history API in beforeunload',
    script: `await page.goto(server.EMPTY_PAGE); await page.evaluate(() => { window.addEventListener('beforeunload', () => history.replaceState(null, 'initial', window.location.href), false); }); const r = await page.goto(server.PREFIX + '/grid.html'); return r.status();`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should work when reload causes history API in beforeunload',
    script: `await page.goto(server.EMPTY_PAGE); await page.evaluate(() => { window.addEventListener('beforeunload', () => history.replaceState(null, 'initial', window.location.href), false); }); await page.reload(); return await page.evaluate(() => 1);`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should disable timeout when its set to 0',
    script: `let loaded = false; page.once('load', () => { loaded = true; }); let error; await page.goto(server.PREFIX + '/grid.html', { timeout: 0, waitUntil: ['load'] }).catch((e) => (error = e)); return [error === undefined, loaded];`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should work when navigating to valid url',
    script: `const r = await page.goto(server.EMPTY_PAGE); return r.ok();`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should return last response in redirect chain',
    script: `const r = await page.goto(server.PREFIX + '/non-existing-page.html'); return [r.ok(), r.url() === server.EMPTY_PAGE];`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should navigate to dataURL and fire dataURL requests',
    script: `const isFavicon = (r) => r.url().includes('favicon'); const requests = []; page.on('request', (r) => !isFavicon(r) && requests.push(r.url())); const dataURL = 'data:text/html,<div>yo</div>'; const r = await page.goto(dataURL); return [r.status(), requests];`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should navigate to URL with hash and fire requests without hash',
    script: `const isFavicon = (r) => r.url().includes('favicon'); const requests = []; page.on('request', (r) => !isFavicon(r) && requests.push(r.url())); const r = await page.goto(server.EMPTY_PAGE + '#hash'); return [r.status(), r.url() === server.EMPTY_PAGE + '#hash', requests.length, requests[0] === server.EMPTY_PAGE + '#hash'];`,
  },
  {
    area: 'navigation',
    name: 'Page.waitForNavigation should work',
    script: `await page.goto(server.EMPTY_PAGE); const [r] = await Promise.all([page.waitForNavigation(), page.evaluate((url) => (window.location.href = url), server.PREFIX + '/grid.html')]); return [r.ok(), r.url().includes('grid.html')];`,
  },
  {
    area: 'navigation',
    name: 'Page.waitForNavigation should work with clicking on anchor links',
    script: `await page.goto(server.EMPTY_PAGE); await page.setContent("<a href='#foobar'>foobar</a>"); const [r] = await Promise.all([page.waitForNavigation(), page.click('a')]); return [r, page.url() === server.EMPTY_PAGE + '#foobar'];`,
  },
  {
    area: 'navigation',
    name: 'Page.waitForNavigation should work with history.replaceState()',
    script: `await page.goto(server.EMPTY_PAGE); await page.setContent("<a onclick='javascript:replaceState()'>SPA</a><script>function replaceState() { history.replaceState({}, '', '/replaced.html') }</script>"); const [r] = await Promise.all([page.waitForNavigation(), page.click('a')]); return [r, page.url() === server.PREFIX + '/replaced.html'];`,
  },
  {
    area: 'navigation',
    name: 'Page.waitForNavigation should work with DOM history.back()/history.forward()',
    script: `await page.goto(server.EMPTY_PAGE); await page.setContent("<a id=back onclick='javascript:goBack()'>back</a><a id=forward onclick='javascript:goForward()'>forward</a><script>function goBack() { history.back(); } function goForward() { history.forward(); } history.pushState({}, '', '/first.html'); history.pushState({}, '', '/second.html');</script>"); const u0 = page.url(); const [b] = await Promise.all([page.waitForNavigation(), page.click('a#back')]); const u1 = page.url(); const [f] = await Promise.all([page.waitForNavigation(), page.click('a#forward')]); return [u0.endsWith('/second.html'), b, u1.endsWith('/first.html'), f, page.url().endsWith('/second.html')];`,
  },
  {
    area: 'navigation',
    name: 'Frame.waitForNavigation should work',
    script: `await page.goto(server.PREFIX + '/frames/one-frame.html'); const frame = page.frames()[1]; const [r] = await Promise.all([frame.waitForNavigation(), frame.evaluate((url) => (window.location.href = url), server.PREFIX + '/grid.html')]); return [r.ok(), r.url().includes('grid.html'), r.frame() === frame, page.url().includes('/frames/one-frame.html')];`,
  },
  {
    area: 'network',
    name: 'Page.Events.Request should fire for navigation requests',
    script: `const isFavicon = (r) => r.url().includes('favicon'); const requests = []; page.on('request', (r) => !isFavicon(r) && requests.push(r)); await page.goto(server.EMPTY_PAGE); return requests.length;`,
  },
  {
    area: 'network',
    name: 'Page.Events.Request should fire for iframes',
    script: `const isFavicon = (r) => r.url().includes('favicon'); const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; const requests = []; page.on('request', (r) => !isFavicon(r) && requests.push(r)); await page.goto(server.EMPTY_PAGE); await attachFrame('frame1', server.EMPTY_PAGE); return requests.length;`,
  },
  {
    area: 'network',
    name: 'Page.Events.Request should fire for fetches',
    script: `const isFavicon = (r) => r.url().includes('favicon'); const requests = []; page.on('request', (r) => !isFavicon(r) && requests.push(r)); await page.goto(server.EMPTY_PAGE); await page.evaluate(() => fetch('/empty.html')); return requests.length;`,
  },
  {
    area: 'network',
    name: 'Request.frame should work for main frame navigation request',
    script: `const isFavicon = (r) => r.url().includes('favicon'); const requests = []; page.on('request', (r) => !isFavicon(r) && requests.push(r)); await page.goto(server.EMPTY_PAGE); return [requests.length, requests[0].frame() === page.mainFrame()];`,
  },
  {
    area: 'network',
    name: 'Request.frame should work for subframe navigation request',
    script: `const isFavicon = (r) => r.url().includes('favicon'); const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; await page.goto(server.EMPTY_PAGE); const requests = []; page.on('request', (r) => !isFavicon(r) && requests.push(r)); await attachFrame('frame1', server.EMPTY_PAGE); return [requests.length, requests[0].frame() === page.frames()[1]];`,
  },
  {
    area: 'network',
    name: 'Request.frame should work for fetch requests',
    script: `const isFavicon = (r) => r.url().includes('favicon'); await page.goto(server.EMPTY_PAGE); const requests = []; page.on('request', (r) => !isFavicon(r) && requests.push(r)); await page.evaluate(() => fetch('/digits/1.png')); return [requests.length, requests[0].frame() === page.mainFrame()];`,
  },
  {
    area: 'network',
    name: 'Request.headers should define Browser in user agent header',
    script: `const r = await page.goto(server.EMPTY_PAGE); return r.request().headers()['user-agent'].includes('Chrome');`,
  },
  {
    area: 'network',
    name: 'Response.fromCache should return |false| for non-cached content',
    script: `const r = await page.goto(server.EMPTY_PAGE); return r.fromCache();`,
  },
  {
    area: 'network',
    name: 'Response.fromServiceWorker should return |false| for non-service-worker content',
    script: `const r = await page.goto(server.EMPTY_PAGE); return r.fromServiceWorker();`,
  },
  {
    area: 'network',
    name: 'Request.postData should be |undefined| when there is no post data',
    script: `const r = await page.goto(server.EMPTY_PAGE); return r.request().postData() === undefined;`,
  },
  {
    area: 'network',
    name: 'Request.postData should work with blobs',
    script: `const isFavicon = (r) => r.url().includes('favicon'); await page.goto(server.EMPTY_PAGE); const [request] = await Promise.all([new Promise((resolve) => page.on('request', (r) => !isFavicon(r) && resolve(r))), page.evaluate(() => fetch('./post', { method: 'POST', body: new Blob([JSON.stringify({ foo: 'bar' })], { type: 'application/json' }) }))]); return [request.postData() === undefined, request.hasPostData(), await request.fetchPostData()];`,
  },
  {
    area: 'network',
    name: 'Response.text should throw when requesting body of redirected response',
    script: `const r = await page.goto(server.PREFIX + '/rredirect'); const chain = r.request().redirectChain(); const redirected = chain[0].response(); try { await redirected.text(); return [chain.length, redirected.status(), 'no error']; } catch (e) { return [chain.length, redirected.status(), e.message.includes('Response body is unavailable for redirect responses')]; }`,
  },
  {
    area: 'network',
    name: 'Network Events Page.Events.Request',
    script: `const isFavicon = (r) => r.url().includes('favicon'); const requests = []; page.on('request', (r) => !isFavicon(r) && requests.push(r)); await page.goto(server.EMPTY_PAGE); const r = requests[0]; return [requests.length, r.url() === server.EMPTY_PAGE, r.method(), !!r.response(), r.frame() === page.mainFrame(), r.frame().url() === server.EMPTY_PAGE];`,
  },
  {
    area: 'network',
    name: 'Network Events Page.Events.Response',
    script: `const isFavicon = (r) => r.url().includes('favicon'); const responses = []; page.on('response', (r) => !isFavicon(r) && responses.push(r)); await page.goto(server.EMPTY_PAGE); const r = responses[0]; return [responses.length, r.url() === server.EMPTY_PAGE, r.status(), r.ok(), !!r.request()];`,
  },
  {
    area: 'network',
    name: 'Network Events Page.Events.RequestFailed',
    script: `await page.setRequestInterception(true); page.on('request', (r) => (r.url().endsWith('css') ? r.abort() : r.continue())); const failed = []; page.on('requestfailed', (r) => failed.push(r)); await page.goto(server.PREFIX + '/one-style.html'); const f = failed[0]; return [failed.length, f.url().includes('one-style.css'), f.response(), !!f.frame(), f.failure().errorText];`,
  },
  {
    area: 'network',
    name: 'Network Events Page.Events.RequestFinished',
    script: `const isFavicon = (r) => r.url().includes('favicon'); const requests = []; page.on('requestfinished', (r) => !isFavicon(r) && requests.push(r)); await page.goto(server.EMPTY_PAGE); const r = requests[0]; return [requests.length, r.url() === server.EMPTY_PAGE, !!r.response(), r.frame() === page.mainFrame(), r.frame().url() === server.EMPTY_PAGE];`,
  },
  {
    area: 'network',
    name: 'Network Events should fire events in proper order',
    script: `const events = []; page.on('request', () => events.push('request')); page.on('response', () => events.push('response')); page.on('requestfinished', () => events.push('requestfinished')); await page.goto(server.EMPTY_PAGE); return events.slice(0, 3);`,
  },
  {
    area: 'network',
    name: 'Network Events should support redirects',
    script: `const events = []; const path = (u) => u.slice(server.PREFIX.length); page.on('request', (r) => events.push(\`\${r.method()} \${path(r.url())}\`)); page.on('response', (r) => events.push(\`\${r.status()} \${path(r.url())}\`)); page.on('requestfinished', (r) => events.push(\`DONE \${path(r.url())}\`)); page.on('requestfailed', (r) => events.push(\`FAIL \${path(r.url())}\`)); const response = await page.goto(server.PREFIX + '/rredirect'); const chain = response.request().redirectChain(); return [events, chain.length, chain[0].url().includes('/rredirect')];`,
  },
  {
    area: 'network',
    name: 'Request.isNavigationRequest should work when navigating to image',
    script: `const [r] = await Promise.all([new Promise((resolve) => page.once('request', resolve)), page.goto(server.PREFIX + '/pptr.png')]); return r.isNavigationRequest();`,
  },
  {
    area: 'network',
    name: 'Request.resourceType should work for document type',
    script: `const r = await page.goto(server.EMPTY_PAGE); return r.request().resourceType();`,
  },
  {
    area: 'network',
    name: 'Request.resourceType should work for stylesheets',
    script: `const css = []; page.on('request', (r) => { if (r.url().endsWith('css')) css.push(r); }); await page.goto(server.PREFIX + '/one-style.html'); return [css.length, css[0].url().includes('one-style.css'), css[0].resourceType()];`,
  },
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should be able to fetch dataURL and fire dataURL requests',
    script: `const isFavicon = (r) => r.url().includes('favicon'); await page.goto(server.EMPTY_PAGE); await page.setRequestInterception(true); const requests = []; page.on('request', (r) => { !isFavicon(r) && requests.push(r.url()); void r.continue(); }); const dataURL = 'data:text/html,<div>yo</div>'; const text = await page.evaluate((url) => fetch(url).then((r) => r.text()), dataURL); return [text, requests];`,
  },
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should navigate to URL with hash and fire requests without hash',
    script: `await page.setRequestInterception(true); const requests = []; page.on('request', (r) => { requests.push(r.url()); void r.continue(); }); const response = await page.goto(server.EMPTY_PAGE + '#hash'); return [response.status(), response.url() === server.EMPTY_PAGE, requests.length, requests[0] === server.EMPTY_PAGE];`,
  },
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should work with encoded server',
    script: `await page.setRequestInterception(true); page.on('request', (r) => r.continue()); const response = await page.goto(server.PREFIX + '/some nonexisting page'); return response.status();`,
  },
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should throw if interception is not enabled',
    script: `let error; page.on('request', async (r) => { try { await r.continue(); } catch (e) { error = e; } }); await page.goto(server.EMPTY_PAGE); return error.message.includes('Request Interception is not enabled');`,
  },
  {
    area: 'requestinterception',
    name: 'Request.continue should work',
    script: `await page.setRequestInterception(true); page.on('request', (r) => r.continue()); await page.goto(server.EMPTY_PAGE); return 'ok';`,
  },
  {
    area: 'requestinterception',
    name: 'Request.continue should amend method',
    script: `await page.goto(server.EMPTY_PAGE); await page.setRequestInterception(true); page.on('request', (r) => void r.continue(r.url().endsWith('/post') ? { method: 'POST' } : {})); return await page.evaluate(() => fetch('/post').then((r) => r.text()));`,
  },
  {
    area: 'requestinterception',
    name: 'Request.continue should amend post data',
    script: `await page.goto(server.EMPTY_PAGE); await page.setRequestInterception(true); page.on('request', (r) => void r.continue(r.url().endsWith('/post') ? { postData: 'doggo' } : {})); return await page.evaluate(() => fetch('/post', { method: 'POST', body: 'birdy' }).then((r) => r.text()));`,
  },
  {
    area: 'requestinterception',
    name: 'Request.continue should amend both post data and method on navigation',
    script: `await page.setRequestInterception(true); page.on('request', (r) => void r.continue({ method: 'POST', postData: 'doggo' })); await page.goto(server.PREFIX + '/post'); return await page.evaluate(() => document.body.textContent);`,
  },
  {
    area: 'requestinterception',
    name: 'Request.continue should redirect in a way non-observable to page',
    script: `await page.setRequestInterception(true); page.on('request', (r) => { const redirectURL = r.url().includes('/empty.html') ? server.PREFIX + '/consolelog.html' : undefined; void r.continue({ url: redirectURL }); }); const [m] = await Promise.all([new Promise((resolve) => page.once('console', resolve)), page.goto(server.EMPTY_PAGE)]); return [page.url() === server.EMPTY_PAGE, m.text()];`,
  },
  {
    area: 'requestinterception',
    name: 'Request.continue should fail if the header value is invalid',
    script: `let error; await page.setRequestInterception(true); page.on('request', async (r) => { await r.continue({ headers: { 'X-Invalid-Header': 'a\\nb' } }).catch((e) => { error = e; }); await r.continue(); }); await page.goto(server.PREFIX + '/empty.html'); return /Invalid header/.test(error.message);`,
  },
  {
    area: 'requestinterception',
    name: 'Request.respond should work with status code 422',
    script: `await page.setRequestInterception(true); page.on('request', (r) => void r.respond({ status: 422, body: 'Yo, page!' })); const response = await page.goto(server.EMPTY_PAGE); return [response.status(), response.statusText(), await page.evaluate(() => document.body.textContent)];`,
  },
  {
    area: 'requestinterception',
    name: 'Request.respond should redirect',
    script: `await page.setRequestInterception(true); page.on('request', (r) => { if (!r.url().includes('rrredirect')) { void r.continue(); return; } void r.respond({ status: 302, headers: { location: server.EMPTY_PAGE } }); }); const response = await page.goto(server.PREFIX + '/rrredirect'); const chain = response.request().redirectChain(); return [chain.length, chain[0].url() === server.PREFIX + '/rrredirect', response.url() === server.EMPTY_PAGE];`,
  },
  {
    area: 'requestinterception',
    name: 'Request.respond should stringify intercepted request response headers',
    script: `await page.setRequestInterception(true); page.on('request', (r) => void r.respond({ status: 200, headers: { foo: true }, body: 'Yo, page!' })); const response = await page.goto(server.EMPTY_PAGE); return [response.status(), response.headers()['foo'], await page.evaluate(() => document.body.textContent)];`,
  },
  {
    area: 'requestinterception',
    name: 'Request.respond should fail if the header value is invalid',
    script: `let error; await page.setRequestInterception(true); page.on('request', async (r) => { await r.respond({ headers: { 'X-Invalid-Header': 'a\\nb' } }).catch((e) => { error = e; }); await r.respond({ status: 200, body: 'Hello World' }); }); await page.goto(server.PREFIX + '/empty.html'); return /Invalid header/.test(error.message);`,
  },
  {
    area: 'cookies',
    name: 'Page.cookies should not get cookies from subdomain',
    script: `await page.setCookie({ url: 'https://base_domain.com', name: 'doggo', value: 'woofs' }); return (await page.cookies('https://sub_domain.base_domain.com')).length;`,
  },
  {
    area: 'cookies',
    name: 'Page.cookies should get cookies from nested path',
    script: `await page.setCookie({ url: 'https://foo.com', path: '/some_path', name: 'doggo', value: 'woofs' }); return (await page.cookies('https://foo.com/some_path/nested_path')).length;`,
  },
  {
    area: 'cookies',
    name: 'Page.cookies should not get cookies from not nested path',
    script: `await page.setCookie({ url: 'https://foo.com', path: '/some_path', name: 'doggo', value: 'woofs' }); return (await page.cookies('https://foo.com/some_path_looks_like_nested')).length;`,
  },
  {
    area: 'cookies',
    name: 'Page.deleteCookie should not delete cookie for different domain',
    script: `await page.goto(server.EMPTY_PAGE); await page.setCookie({ name: 'some_cookie_name', value: 'local page cookie value' }); const a = (await page.cookies()).length; await page.setCookie({ url: 'https://example.com', name: 'some_cookie_name', value: 'COOKIE_DESTINATION_URL cookie value' }); const b = (await page.cookies('https://example.com')).length; await page.deleteCookie({ name: 'some_cookie_name' }); const left = await page.cookies('https://example.com'); return [a, b, (await page.cookies()).length, left.map((c) => [c.name, c.value, c.domain])];`,
  },
  {
    area: 'cookies',
    name: 'Page.deleteCookie should delete cookie for specified URL',
    script: `await page.goto(server.EMPTY_PAGE); await page.setCookie({ name: 'some_cookie_name', value: 'some_cookie_value' }); await page.setCookie({ url: 'https://example.com', name: 'some_cookie_name', value: 'another_cookie_value' }); const b = (await page.cookies('https://example.com')).length; await page.deleteCookie({ url: 'https://example.com', name: 'some_cookie_name' }); return [b, (await page.cookies('https://example.com')).length, (await page.cookies()).map((c) => [c.name, c.value])];`,
  },
  {
    area: 'click',
    name: 'should click the button if window.Node is removed',
    path: '/input/button.html',
    script: `await page.evaluate(() => delete window.Node); await page.click('button'); return await page.evaluate(() => globalThis.result);`,
  },
  {
    area: 'click',
    name: 'should click on a span with an inline element inside',
    script: `await page.setContent("<style>span::before { content: 'q'; }</style><span onclick='javascript:window.CLICKED=42'></span>"); await page.click('span'); return await page.evaluate(() => globalThis.CLICKED);`,
  },
  {
    area: 'click',
    name: 'should scroll and click with disabled javascript',
    script: `await page.setJavaScriptEnabled(false); await page.goto(server.PREFIX + '/wrappedlink.html'); const body = await page.waitForSelector('body'); await body.evaluate((el) => { el.style.paddingTop = '3000px'; }); await Promise.all([page.click('a'), page.waitForNavigation()]); return page.url() === server.PREFIX + '/wrappedlink.html#clicked';`,
  },
  {
    area: 'click',
    name: 'should click when one of inline box children is outside of viewport',
    script: `await page.setContent("<style>i { position: absolute; top: -1000px; }</style><span onclick='javascript:window.CLICKED = 42;'><i>woof</i><b>doggo</b></span>"); await page.click('span'); return await page.evaluate(() => globalThis.CLICKED);`,
  },
  {
    area: 'click',
    name: 'should not hang with touch-enabled viewports',
    script: `await page.setViewport(KnownDevices['iPhone 6'].viewport); await page.mouse.down(); await page.mouse.move(100, 10); await page.mouse.up(); return 'ok';`,
  },
  {
    area: 'click',
    name: 'should fire back click',
    path: '/input/scrollable.html',
    script: `await page.click('#button-8', { button: 'back' }); return await page.evaluate(() => document.querySelector('#button-8').textContent);`,
  },
  {
    area: 'click',
    name: 'should fire forward click',
    path: '/input/scrollable.html',
    script: `await page.click('#button-8', { button: 'forward' }); return await page.evaluate(() => document.querySelector('#button-8').textContent);`,
  },
  {
    area: 'click',
    name: 'should click links which cause navigation',
    script: `await page.setContent(\`<a href="\${server.EMPTY_PAGE}">empty.html</a>\`); await page.click('a'); return 'ok';`,
  },
  {
    area: 'click',
    name: 'should click the button with fixed position inside an iframe',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; await page.goto(server.EMPTY_PAGE); await page.setViewport({ width: 500, height: 500 }); await page.setContent('<div style="width:100px;height:2000px">spacer</div>'); await attachFrame('button-test', server.CROSS_PROCESS_PREFIX + '/input/button.html'); const frame = page.frames()[1]; await frame.$eval('button', (button) => button.style.setProperty('position', 'fixed')); await frame.click('button'); return await frame.evaluate(() => globalThis.result);`,
  },
  {
    area: 'click',
    name: 'should click the button with deviceScaleFactor set',
    script: `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); }; await page.setViewport({ width: 400, height: 400, deviceScaleFactor: 5 }); const dpr = await page.evaluate(() => window.devicePixelRatio); await page.setContent('<div style="width:100px;height:100px">spacer</div>'); await attachFrame('button-test', server.PREFIX + '/input/button.html'); const frame = page.frames()[1]; const button = await frame.$('button'); await button.click(); return [dpr, await frame.evaluate(() => globalThis.result)];`,
  },
  {
    area: 'emulation',
    name: 'Page.emulateMediaType should throw in case of bad argument',
    script: `try { await page.emulateMediaType('bad'); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'emulation',
    name: 'Page.emulateMediaFeatures should throw in case of bad argument',
    script: `try { await page.emulateMediaFeatures([{ name: 'bad', value: '' }]); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'emulation',
    name: 'Page.emulateVisionDeficiency should throw for invalid vision deficiencies',
    script: `try { await page.emulateVisionDeficiency('invalid'); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'emulation',
    name: 'Page.viewport should support mobile emulation',
    path: '/mobile.html',
    script: `const w = () => page.evaluate(() => window.innerWidth); const a = await w(); await page.setViewport(KnownDevices['iPhone 6'].viewport); const b = await w(); await page.setViewport({ width: 400, height: 300 }); return [a, b, await w()];`,
  },
  {
    area: 'emulation',
    name: 'Page.viewport should support touch emulation',
    path: '/mobile.html',
    script: `const t = () => page.evaluate(() => 'ontouchstart' in window); const a = await t(); await page.setViewport(KnownDevices['iPhone 6'].viewport); const b = await t(); const d = await page.evaluate(() => { let fulfill; const promise = new Promise((x) => (fulfill = x)); window.ontouchstart = () => fulfill('Received touch'); window.dispatchEvent(new Event('touchstart')); fulfill('Did not receive touch'); return promise; }); await page.setViewport({ width: 100, height: 100 }); return [a, b, d, await t()];`,
  },
  {
    area: 'emulation',
    name: 'Page.viewport should support landscape emulation',
    path: '/mobile.html',
    script: `const o = () => page.evaluate(() => screen.orientation.type); const a = await o(); await page.setViewport(KnownDevices['iPhone 6 landscape'].viewport); const b = await o(); await page.setViewport({ width: 100, height: 100 }); return [a, b, await o()];`,
  },
  {
    area: 'emulation',
    name: 'Page.emulate should support clicking',
    script: `await page.emulate(KnownDevices['iPhone 6']); await page.goto(server.PREFIX + '/input/button.html'); const button = await page.$('button'); await page.evaluate((b) => (b.style.marginTop = '200px'), button); await button.click(); return await page.evaluate(() => globalThis.result);`,
  },
  {
    area: 'queryselector',
    name: 'Page.$$eval should accept ElementHandles as arguments',
    script: `await page.setContent('<section>2</section><section>2</section><section>1</section><div>3</div>'); const div = await page.$('div'); return await page.$$eval('section', (sections, div) => sections.reduce((acc, s) => acc + Number(s.textContent), 0) + Number(div.textContent), div);`,
  },
  {
    area: 'queryselector',
    name: 'ElementHandle.$ should return null for non-existing element',
    script: `await page.setContent('<html><body><div class="second"><div class="inner">B</div></div></body></html>'); const html = await page.$('html'); return await html.$('.third');`,
  },
  {
    area: 'queryselector',
    name: 'ElementHandle.$eval should retrieve content from subtree',
    script: `await page.setContent('<div class="a">not-a-child-div</div><div id="myId"><div class="a">a-child-div</div></div>'); const h = await page.$('#myId'); return await h.$eval('.a', (node) => node.innerText);`,
  },
  {
    area: 'queryselector',
    name: 'ElementHandle.$eval should throw in case of missing selector',
    script: `await page.setContent('<div class="a">not-a-child-div</div><div id="myId"></div>'); const h = await page.$('#myId'); return await h.$eval('.a', (node) => node.innerText).catch((e) => e.message);`,
  },
  {
    area: 'queryselector',
    name: 'ElementHandle.$$eval should retrieve content from subtree',
    script: `await page.setContent('<div class="a">not-a-child-div</div><div id="myId"><div class="a">a1-child-div</div><div class="a">a2-child-div</div></div>'); const h = await page.$('#myId'); return await h.$$eval('.a', (nodes) => nodes.map((n) => n.innerText));`,
  },
  {
    area: 'queryselector',
    name: 'ElementHandle.$$eval should not throw in case of missing selector',
    script: `await page.setContent('<div class="a">not-a-child-div</div><div id="myId"></div>'); const h = await page.$('#myId'); return await h.$$eval('.a', (nodes) => nodes.length);`,
  },
  {
    area: 'queryselector',
    name: 'ElementHandle.$$ should query existing elements',
    script: `await page.setContent('<html><body><div>A</div><br/><div>B</div></body></html>'); const html = await page.$('html'); const els = await html.$$('div'); return await Promise.all(els.map((e) => page.evaluate((e) => e.textContent, e)));`,
  },
  {
    area: 'queryselector',
    name: 'ElementHandle.$$ should return empty array for non-existing elements',
    script: `await page.setContent('<html><body><span>A</span><br/><span>B</span></body></html>'); const html = await page.$('html'); return (await html.$$('div')).length;`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.boundingBox should force a layout',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent('<div style="width: 100px; height: 100px">hello</div>'); const h = await page.$('div'); await page.evaluate((e) => (e.style.height = '200px'), h); return await h.boundingBox();`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.boundingBox should work with SVG nodes',
    script: `await page.setContent('<svg xmlns="http://www.w3.org/2000/svg" width="500" height="500"><rect id="theRect" x="30" y="50" width="200" height="300"></rect></svg>'); const el = await page.$('#therect'); const a = await el.boundingBox(); const b = await page.evaluate((e) => { const r = e.getBoundingClientRect(); return { x: r.x, y: r.y, width: r.width, height: r.height }; }, el); return JSON.stringify(a) === JSON.stringify(b);`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.boxModel should return null for invisible elements',
    script: `await page.setContent('<div style="display:none">hi</div>'); const el = await page.$('div'); return await el.boxModel();`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.boxModel should correctly compute box model with offsets',
    script: `await page.setContent(\`<div style='position:absolute; left: 100px; top: 100px; width: 200px; height: 100px; border: 10px solid green; padding: 11px; margin: 12px;' id='box'></div>\`); const el = await page.$('#box'); return await el.boxModel();`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.click should work for Shadow DOM v1',
    path: '/shadow.html',
    script: `const h = await page.evaluateHandle(() => button); await h.click(); return await page.evaluate(() => clicked);`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.click should not work for TextNodes',
    path: '/input/button.html',
    script: `const t = await page.evaluateHandle(() => document.querySelector('button').firstChild); try { await t.click(); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.click should throw for hidden nodes',
    path: '/input/button.html',
    script: `const b = await page.$('button'); await page.evaluate((b) => (b.style.display = 'none'), b); try { await b.click(); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.click should throw for recursively hidden nodes',
    path: '/input/button.html',
    script: `const b = await page.$('button'); await page.evaluate((b) => (b.parentElement.style.display = 'none'), b); try { await b.click(); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.click should throw for <br> elements',
    script: `await page.setContent('hello<br>goodbye'); const br = await page.$('br'); try { await br.click(); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.clickablePoint should work',
    script: `await page.evaluate(() => { document.body.style.padding = '0'; document.body.style.margin = '0'; document.body.innerHTML = '<div style="cursor: pointer; width: 120px; height: 60px; margin: 30px; padding: 15px;"></div>'; }); await page.evaluate(() => new Promise((r) => window.requestAnimationFrame(r))); const d = await page.$('div'); return [await d.clickablePoint(), await d.clickablePoint({ x: 10, y: 15 })];`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.clickablePoint should not work if the click box is not visible',
    script: `const out = []; for (const side of ['left', 'right', 'top', 'bottom']) { await page.setContent(\`<button style="width: 10px; height: 10px; position: absolute; \${side}: -20px"></button>\`); const h = await page.locator('button').waitHandle(); out.push(await h.clickablePoint().then(() => 'no error', (e) => e instanceof Error)); } return out;`,
  },
  {
    area: 'elementhandle',
    name: 'Element.waitForSelector should wait correctly with waitForSelector on an element',
    script: `const w = page.waitForSelector('.foo'); await page.setContent('<div id="not-foo"></div><div class="bar">bar2</div><div class="foo">Foo1</div>'); const el = await w; const inner = el.waitForSelector('.bar'); await el.evaluate((e) => { e.innerHTML = '<div class="bar">bar1</div>'; }); const el2 = await inner; return await el2.evaluate((e) => e.innerText);`,
  },
  {
    area: 'elementhandle',
    name: 'Element.waitForSelector should wait correctly with waitForSelector and xpath on an element',
    script: `await page.setContent('<div id=el1>el1<div id=el2>el2</div></div><div id=el3>el3</div>'); const el = await page.waitForSelector('#el1'); const x = await el.waitForSelector('xpath/.//div'); return await x.evaluate((e) => e.id);`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.isIntersectingViewport should work with threshold',
    path: '/offscreenbuttons.html',
    script: `const b = await page.$('#btn11'); return await b.isIntersectingViewport({ threshold: 0.001 });`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.isIntersectingViewport should work with threshold of 1',
    path: '/offscreenbuttons.html',
    script: `const b = await page.$('#btn0'); return await b.isIntersectingViewport({ threshold: 1 });`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.click should return Point data',
    script: `const clicks = []; await page.exposeFunction('reportClick', (x, y) => { clicks.push([x, y]); }); await page.evaluate(() => { document.body.style.padding = '0'; document.body.style.margin = '0'; document.body.innerHTML = '<div style="cursor: pointer; width: 120px; height: 60px; margin: 30px; padding: 15px;"></div>'; document.body.addEventListener('click', (e) => { window.reportClick(e.clientX, e.clientY); }); }); const d = await page.$('div'); await d.click(); await d.click({ offset: { x: 10, y: 15 } }); for (let i = 0; i < 50 && clicks.length < 2; i++) await new Promise((r) => setTimeout(r, 20)); return clicks;`,
  },
];
