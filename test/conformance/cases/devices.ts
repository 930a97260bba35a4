// After puppeteer/puppeteer test/src/keyboard.spec.ts and mouse.spec.ts (Apache-2.0):
// the cases the first cut (cases/input.ts) did not take. Where a test asserts
// after each step, the case returns every step's value in order.
import type { Case } from '../harness.js';

/** The keyboard fixture's log, read and cleared as the tests' getResult(). */
const RESULT = `const getResult = () => page.evaluate(() => globalThis.getResult());`;
const TEXTAREA_VALUE = `const value = () => page.evaluate(() => document.querySelector('textarea').value);`;
/** mouse.spec.ts's dimensions(): the textarea's box. */
const DIMENSIONS = `const dimensions = () => { const rect = document.querySelector('textarea').getBoundingClientRect(); return { x: rect.left, y: rect.top, width: rect.width, height: rect.height }; };`;
/** mouse.spec.ts's addMouseDataListeners(page, options). */
const MOUSE_DATA = `const addMouseDataListeners = (options = {}) => page.evaluate(({ includeMove }) => { const clicks = []; const listener = (event) => { clicks.push({ type: event.type, detail: event.detail, clientX: event.clientX, clientY: event.clientY, isTrusted: event.isTrusted, button: event.button, buttons: event.buttons }); }; document.addEventListener('mousedown', listener); if (includeMove) document.addEventListener('mousemove', listener); document.addEventListener('mouseup', listener); document.addEventListener('click', listener); document.addEventListener('auxclick', listener); window.clicks = clicks; }, options);`;

export const cases: Case[] = [
  // ------------------------------------------------------------ keyboard
  {
    area: 'keyboard',
    name: 'should move with the arrow keys',
    path: '/input/textarea.html',
    script: `${TEXTAREA_VALUE} await page.type('textarea', 'Hello World!'); const a = await value(); for (const _ of 'World!') await page.keyboard.press('ArrowLeft'); await page.keyboard.type('inserted '); const b = await value(); await page.keyboard.down('Shift'); for (const _ of 'inserted ') await page.keyboard.press('ArrowLeft'); await page.keyboard.up('Shift'); await page.keyboard.press('Backspace'); return [a, b, await value()];`,
  },
  {
    area: 'keyboard',
    name: 'should send a character with ElementHandle.press',
    path: '/input/textarea.html',
    script: `${TEXTAREA_VALUE} const textarea = await page.$('textarea'); await textarea.press('a'); const a = await value(); await page.evaluate(() => window.addEventListener('keydown', (e) => e.preventDefault(), true)); await textarea.press('b'); return [a, await value()];`,
  },
  {
    area: 'keyboard',
    name: 'ElementHandle.press should not support |text| option',
    path: '/input/textarea.html',
    script: `${TEXTAREA_VALUE} const textarea = await page.$('textarea'); await textarea.press('a', { text: 'ё' }); return await value();`,
  },
  {
    area: 'keyboard',
    name: 'should send a character with sendCharacter (inputs and keydowns)',
    upstream: 'keyboard: should send a character with sendCharacter',
    path: '/input/textarea.html',
    script: `await page.focus('textarea'); await page.evaluate(() => { globalThis.inputCount = 0; globalThis.keyDownCount = 0; window.addEventListener('input', () => { globalThis.inputCount += 1; }, true); window.addEventListener('keydown', () => { globalThis.keyDownCount += 1; }, true); }); const read = () => page.$eval('textarea', (t) => ({ value: t.value, inputs: globalThis.inputCount, keyDowns: globalThis.keyDownCount })); await page.keyboard.sendCharacter('嗨'); const a = await read(); await page.keyboard.sendCharacter('a'); return [a, await read()];`,
  },
  {
    area: 'keyboard',
    name: 'should send a character with sendCharacter in iframe',
    script: `await page.setContent('<iframe srcdoc="<iframe name=\\'test\\' srcdoc=\\'<textarea></textarea>\\'></iframe>"></iframe>'); const frame = await page.waitForFrame(async (frame) => { const element = await frame.frameElement(); if (!element) return false; const name = await element.evaluate((f) => f.name); return name === 'test'; }); await frame.focus('textarea'); await frame.evaluate(() => { globalThis.inputCount = 0; globalThis.keyDownCount = 0; window.addEventListener('input', () => { globalThis.inputCount += 1; }, true); window.addEventListener('keydown', () => { globalThis.keyDownCount += 1; }, true); }); const read = () => frame.$eval('textarea', (t) => ({ value: t.value, inputs: globalThis.inputCount, keyDowns: globalThis.keyDownCount })); await page.keyboard.sendCharacter('嗨'); const a = await read(); await page.keyboard.sendCharacter('a'); return [a, await read()];`,
  },
  {
    area: 'keyboard',
    name: 'should report shiftKey, Alt and Control',
    upstream: 'keyboard: should report shiftKey',
    path: '/input/keyboard.html',
    script: `${RESULT} const keyboard = page.keyboard; const out = []; for (const modifierKey of ['Shift', 'Alt', 'Control']) { await keyboard.down(modifierKey); out.push(await getResult()); await keyboard.down('!'); out.push(await getResult()); await keyboard.up('!'); out.push(await getResult()); await keyboard.up(modifierKey); out.push(await getResult()); } return out;`,
  },
  {
    area: 'keyboard',
    name: 'should report multiple modifiers',
    path: '/input/keyboard.html',
    script: `${RESULT} const keyboard = page.keyboard; const out = []; await keyboard.down('Control'); out.push(await getResult()); await keyboard.down('Alt'); out.push(await getResult()); await keyboard.down(';'); out.push(await getResult()); await keyboard.up(';'); out.push(await getResult()); await keyboard.up('Control'); out.push(await getResult()); await keyboard.up('Alt'); out.push(await getResult()); return out;`,
  },
  {
    area: 'keyboard',
    name: 'should send proper codes while typing',
    path: '/input/keyboard.html',
    script: `${RESULT} await page.keyboard.type('!'); const a = await getResult(); await page.keyboard.type('^'); return [a, await getResult()];`,
  },
  {
    area: 'keyboard',
    name: 'should send proper codes while typing with shift',
    path: '/input/keyboard.html',
    script: `${RESULT} await page.keyboard.down('Shift'); await page.keyboard.type('~'); const a = await getResult(); await page.keyboard.up('Shift'); return a;`,
  },
  {
    area: 'keyboard',
    name: 'should not type canceled events',
    path: '/input/textarea.html',
    script: `await page.focus('textarea'); await page.evaluate(() => { window.addEventListener('keydown', (event) => { event.stopPropagation(); event.stopImmediatePropagation(); if (event.key === 'l') event.preventDefault(); if (event.key === 'o') event.preventDefault(); }, false); }); await page.keyboard.type('Hello World!'); return await page.evaluate(() => globalThis.textarea.value);`,
  },
  {
    area: 'keyboard',
    name: 'should specify repeat property (down twice, up and down)',
    upstream: 'keyboard: should specify repeat property',
    path: '/input/textarea.html',
    script: `await page.focus('textarea'); await page.evaluate(() => document.querySelector('textarea').addEventListener('keydown', (e) => (globalThis.lastEvent = e), true)); const repeat = () => page.evaluate(() => globalThis.lastEvent.repeat); await page.keyboard.down('a'); await page.keyboard.press('a'); await page.keyboard.down('b'); const a = await repeat(); await page.keyboard.down('b'); const b = await repeat(); await page.keyboard.up('a'); await page.keyboard.down('a'); return [a, b, await repeat()];`,
  },
  {
    area: 'keyboard',
    name: 'should type all kinds of characters',
    path: '/input/textarea.html',
    script: `await page.focus('textarea'); const text = 'This text goes onto two lines.\\nThis character is 嗨.'; await page.keyboard.type(text); return (await page.evaluate('result')) === text;`,
  },
  {
    area: 'keyboard',
    name: 'should specify location',
    path: '/input/textarea.html',
    script: `await page.evaluate(() => { window.addEventListener('keydown', (event) => (globalThis.keyLocation = event.location), true); }); const textarea = await page.$('textarea'); const out = []; for (const key of ['Digit5', 'ControlLeft', 'ControlRight', 'NumpadSubtract']) { await textarea.press(key); out.push(await page.evaluate('keyLocation')); } return out;`,
  },
  {
    area: 'keyboard',
    name: 'should type emoji into an iframe',
    script: `await page.evaluate(async (url) => { const frame = document.createElement('iframe'); frame.id = 'emoji-test'; frame.src = url; document.body.appendChild(frame); await new Promise((r) => (frame.onload = r)); }, server.PREFIX + '/input/textarea.html'); const frame = page.frames()[1]; const textarea = await frame.$('textarea'); await textarea.type('👹 Tokyo street Japan 🇯🇵'); return await frame.$eval('textarea', (t) => t.value);`,
  },
  // ------------------------------------------------------------ mouse
  {
    area: 'mouse',
    name: 'should resize the textarea',
    path: '/input/textarea.html',
    script: `${DIMENSIONS} const { x, y, width, height } = await page.evaluate(dimensions); const mouse = page.mouse; await mouse.move(x + width - 4, y + height - 4); await mouse.down(); await mouse.move(x + width + 100, y + height + 100); await mouse.up(); const after = await page.evaluate(dimensions); return [after.width === Math.round(width + 104), after.height === Math.round(height + 104)];`,
  },
  {
    area: 'mouse',
    name: 'should select the text with mouse',
    path: '/input/textarea.html',
    script: `${DIMENSIONS} await page.focus('textarea'); const text = "This is the text that we are going to try to select. Let's see how it goes."; await page.keyboard.type(text); await page.evaluate(() => new Promise(requestAnimationFrame)); await page.evaluate(() => (document.querySelector('textarea').scrollTop = 0)); const { x, y } = await page.evaluate(dimensions); await page.mouse.move(x + 2, y + 2); await page.mouse.down(); await page.mouse.move(100, 100); await page.mouse.up(); return await page.evaluate(() => { const t = document.querySelector('textarea'); return t.value.substring(t.selectionStart, t.selectionEnd); });`,
  },
  {
    area: 'mouse',
    name: 'should trigger hover state with removed window.Node',
    path: '/input/scrollable.html',
    script: `await page.evaluate(() => delete window.Node); await page.hover('#button-6'); return await page.evaluate(() => document.querySelector('button:hover').id);`,
  },
  {
    area: 'mouse',
    name: 'should set modifier keys on click (Shift, Control, Alt, Meta)',
    upstream: 'mouse: should set modifier keys on click',
    path: '/input/scrollable.html',
    script: `await page.evaluate(() => document.querySelector('#button-3').addEventListener('mousedown', (e) => (globalThis.lastEvent = e), true)); const modifiers = [['Shift', 'shiftKey'], ['Control', 'ctrlKey'], ['Alt', 'altKey'], ['Meta', 'metaKey']]; const held = []; for (const [modifier, key] of modifiers) { await page.keyboard.down(modifier); await page.click('#button-3'); held.push(await page.evaluate((mod) => globalThis.lastEvent[mod], key)); await page.keyboard.up(modifier); } await page.click('#button-3'); const released = []; for (const [, key] of modifiers) released.push(await page.evaluate((mod) => globalThis.lastEvent[mod], key)); return [held, released];`,
  },
  {
    area: 'mouse',
    name: 'should send mouse wheel events',
    path: '/input/wheel.html',
    script: `const elem = await page.$('div'); const before = await elem.boundingBox(); await page.mouse.move(before.x + before.width / 2, before.y + before.height / 2); await page.mouse.wheel({ deltaY: -100 }); const after = await elem.boundingBox(); return [[before.width, before.height], [after.width, after.height]];`,
  },
  {
    area: 'mouse',
    name: 'should tween mouse movement',
    script: `await page.mouse.move(100, 100); await page.evaluate(() => { globalThis.result = []; document.addEventListener('mousemove', (event) => { globalThis.result.push([event.clientX, event.clientY]); }); }); await page.mouse.move(200, 300, { steps: 5 }); return await page.evaluate('result');`,
  },
  {
    area: 'mouse',
    name: 'should work with mobile viewports and cross process navigations',
    script: `await page.setViewport({ width: 360, height: 640, isMobile: true }); await page.goto(server.CROSS_PROCESS_PREFIX + '/mobile.html'); await page.evaluate(() => { document.addEventListener('click', (event) => { globalThis.result = { x: event.clientX, y: event.clientY }; }); }); await page.mouse.click(30, 40); return await page.evaluate('result');`,
  },
  {
    area: 'mouse',
    name: 'should not throw if buttons are pressed twice',
    // Puppeteer 24 throws here ("'left' is already pressed."): the case compares the message.
    script: `await page.mouse.down(); return await page.mouse.down().then(() => 'no error', (e) => e.message);`,
  },
  {
    area: 'mouse',
    name: 'should not throw if clicking in parallel',
    script: `${MOUSE_DATA} await addMouseDataListeners(); await Promise.all([page.mouse.click(0, 5), page.mouse.click(6, 10)]); return await page.evaluate(() => window.clicks);`,
  },
  {
    area: 'mouse',
    name: 'should reset properly',
    script: `${MOUSE_DATA} await page.mouse.move(5, 5); await Promise.all([page.mouse.down({ button: 'left' }), page.mouse.down({ button: 'middle' }), page.mouse.down({ button: 'right' })]); await addMouseDataListeners({ includeMove: true }); await page.mouse.reset(); return await page.evaluate(() => window.clicks);`,
  },
];
