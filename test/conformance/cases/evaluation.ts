// After puppeteer/puppeteer test/src/evaluation.spec.ts (Apache-2.0).
import type { Case } from '../harness.js';

const area = 'evaluation';
export const cases: Case[] = [
  { area, name: 'should work', script: `return await page.evaluate(() => 7 * 3);` },
  {
    area,
    name: 'should transfer BigInt',
    script: `const r = await page.evaluate((a) => a, BigInt(42)); return [typeof r, String(r)];`,
  },
  {
    area,
    name: 'should transfer NaN',
    script: `const r = await page.evaluate((a) => a, NaN); return Object.is(r, NaN);`,
  },
  { area, name: 'should transfer -0', script: `const r = await page.evaluate((a) => a, -0); return Object.is(r, -0);` },
  {
    area,
    name: 'should transfer Infinity',
    script: `const r = await page.evaluate((a) => a, Infinity); return Object.is(r, Infinity);`,
  },
  {
    area,
    name: 'should transfer -Infinity',
    script: `const r = await page.evaluate((a) => a, -Infinity); return Object.is(r, -Infinity);`,
  },
  { area, name: 'should transfer arrays', script: `return await page.evaluate((a) => a, [1, 2, 3]);` },
  {
    area,
    name: 'should transfer arrays as arrays, not objects',
    script: `return await page.evaluate((a) => Array.isArray(a), [1, 2, 3]);`,
  },
  {
    area,
    name: 'should modify global environment',
    path: '/global-var.html',
    script: `await page.evaluate(() => { globalThis.globalVar = 123; }); return await page.evaluate('globalVar');`,
  },
  {
    area,
    name: 'should evaluate in the page context',
    path: '/global-var.html',
    script: `return await page.evaluate(() => globalVar);`,
  },
  {
    area,
    name: 'should return undefined for objects with symbols',
    script: `const r = await page.evaluate(() => [Symbol('foo4')]); return JSON.stringify(r);`,
  },
  {
    area,
    name: 'should work with function shorthands',
    script: `const a = { sum(a, b) { return a + b; }, async mult(a, b) { return a * b; } }; return [await page.evaluate(a.sum, 1, 2), await page.evaluate(a.mult, 2, 4)];`,
  },
  {
    area,
    name: 'should work with unicode chars',
    script: `return await page.evaluate((a) => a['中文字符'], { '中文字符': 42 });`,
  },
  {
    area,
    name: 'should throw when evaluation triggers reload',
    script: `try { await page.evaluate(() => { location.reload(); return new Promise(() => {}); }); return 'no error'; } catch (e) { return e.message.includes('Execution context was destroyed') || e.message; }`,
  },
  { area, name: 'should await promise', script: `return await page.evaluate(() => Promise.resolve(8 * 7));` },
  {
    area,
    name: 'should work right after framenavigated',
    script: `let p; page.on('framenavigated', (frame) => { p = frame.evaluate(() => 6 * 7); }); await page.goto(server.EMPTY_PAGE); return await p;`,
  },
  {
    area,
    name: 'should work from-inside an exposed function',
    script: `await page.exposeFunction('callController', async (a, b) => await page.evaluate((a, b) => a * b, a, b)); return await page.evaluate(async () => await globalThis.callController(9, 3));`,
  },
  {
    area,
    name: 'should reject promise with exception',
    script: `try { await page.evaluate(() => notExistingObject.property); return 'no error'; } catch (e) { return e.message.includes('notExistingObject'); }`,
  },
  {
    area,
    name: 'should support thrown strings as error messages',
    script: `try { await page.evaluate(() => { throw 'qwerty'; }); return 'no error'; } catch (e) { return e; }`,
  },
  {
    area,
    name: 'should support thrown numbers as error messages',
    script: `try { await page.evaluate(() => { throw 100500; }); return 'no error'; } catch (e) { return e; }`,
  },
  {
    area,
    name: 'should return complex objects',
    script: `const object = { foo: 'bar!' }; return await page.evaluate((a) => a, object);`,
  },
  {
    area,
    name: 'should return BigInt',
    script: `const r = await page.evaluate(() => BigInt(42)); return [typeof r, String(r)];`,
  },
  { area, name: 'should return NaN', script: `const r = await page.evaluate(() => NaN); return Object.is(r, NaN);` },
  { area, name: 'should return -0', script: `const r = await page.evaluate(() => -0); return Object.is(r, -0);` },
  {
    area,
    name: 'should return Infinity',
    script: `const r = await page.evaluate(() => Infinity); return Object.is(r, Infinity);`,
  },
  {
    area,
    name: 'should return -Infinity',
    script: `const r = await page.evaluate(() => -Infinity); return Object.is(r, -Infinity);`,
  },
  {
    area,
    name: 'should accept "undefined" as one of multiple parameters',
    script: `return await page.evaluate((a, b) => Object.is(a, undefined) && Object.is(b, 'foo'), undefined, 'foo');`,
  },
  {
    area,
    name: 'should properly serialize null fields',
    script: `return await page.evaluate(() => ({ a: undefined }));`,
  },
  {
    area,
    name: 'should return undefined for non-serializable objects',
    script: `const r = await page.evaluate(() => window); return r === undefined ? 'undefined' : typeof r;`,
  },
  {
    area,
    name: 'should fail for circular object',
    script: `const r = await page.evaluate(() => { const a = {}; const b = { a }; a.b = b; return a; }); return r === undefined ? 'undefined' : typeof r;`,
  },
  {
    area,
    name: 'should be able to throw a tricky error',
    script: `const h = await page.evaluateHandle(() => window); const msg = await h.jsonValue().catch((e) => e.message); try { await page.evaluate((m) => { throw new Error(m); }, msg); } catch (e) { return e.message.includes(msg); } return 'no error';`,
  },
  { area, name: 'should accept a string', script: `return await page.evaluate('1 + 2');` },
  { area, name: 'should accept a string with semi colons', script: `return await page.evaluate('1 + 5;');` },
  {
    area,
    name: 'should accept a string with comments',
    script: `return await page.evaluate('2 + 5;\\n// do some math!');`,
  },
  {
    area,
    name: 'should accept element handle as an argument',
    script: `await page.setContent('<section>42</section>'); const element = await page.$('section'); return await page.evaluate((e) => e.textContent, element);`,
  },
  {
    area,
    name: 'should throw if underlying element was disposed',
    script: `await page.setContent('<section>39</section>'); const element = await page.$('section'); await element.dispose(); try { await page.evaluate((e) => e.textContent, element); return 'no error'; } catch (e) { return e.message.includes('JSHandle is disposed'); }`,
  },
  {
    area,
    name: 'should simulate a user gesture',
    script: `return await page.evaluate(() => { document.body.appendChild(document.createTextNode('test')); document.execCommand('selectAll'); return document.execCommand('copy'); });`,
  },
  {
    area,
    name: 'should not throw an error when evaluation does a navigation',
    path: '/title.html',
    script: `return await page.evaluate(() => { window.location = '/empty.html'; return [42]; });`,
  },
  {
    area,
    name: 'should transfer 100Mb of data from page to node.js (1Mb here)',
    script: `const a = await page.evaluate(() => Array(1024 * 1024 + 1).join('a')); return a.length;`,
  },
  {
    area,
    name: 'should throw error with detailed information on exception inside promise',
    script: `try { await page.evaluate(() => new Promise(() => { throw new Error('Error in promise'); })); return 'no error'; } catch (e) { return e.message.includes('Error in promise'); }`,
  },
  {
    area,
    name: 'thrown Error keeps its name and message',
    script: `try { await page.evaluate(() => { const e = new TypeError('bad type'); throw e; }); } catch (e) { return [e.name, e.message, e instanceof Error]; }`,
  },
  {
    area,
    name: 'thrown null arrives as null',
    script: `try { await page.evaluate(() => { throw null; }); return 'no error'; } catch (e) { return e === null ? 'null' : typeof e; }`,
  },
  {
    area,
    name: 'evaluateOnNewDocument runs before page scripts',
    script: `await page.evaluateOnNewDocument(() => { globalThis.injected = 123; }); await page.goto(server.PREFIX + '/title.html'); return await page.evaluate(() => globalThis.injected);`,
  },
  {
    area,
    name: 'evaluateOnNewDocument with arguments',
    script: `await page.evaluateOnNewDocument((a, b) => { globalThis.injected = a + b; }, 2, 3); await page.reload(); return await page.evaluate(() => globalThis.injected);`,
  },
  {
    area,
    name: 'removeScriptToEvaluateOnNewDocument',
    script: `const { identifier } = await page.evaluateOnNewDocument(() => { globalThis.injected = 123; }); await page.removeScriptToEvaluateOnNewDocument(identifier); await page.reload(); return await page.evaluate(() => typeof globalThis.injected);`,
  },
];
