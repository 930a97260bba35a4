// Fixture pages for the conformance cases, written after the pages of
// Puppeteer's test/assets that its page-level tests load (same roles, same ids
// and globals where the tests read them). Served by test/helpers/fixtures.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { html, type Route } from '../helpers/fixtures.js';

const BUTTON = `<!DOCTYPE html><html><head><title>Button test</title></head><body>
<button onclick="clicked();">Click target</button>
<script>
  window.result = 'Was not clicked';
  function clicked() { result = 'Clicked'; }
</script></body></html>`;

const TEXTAREA = `<!DOCTYPE html><html><head><title>Textarea test</title></head><body>
<textarea></textarea>
<input type="text" />
<script>
  window.result = '';
  window.textarea = document.querySelector('textarea');
  textarea.addEventListener('input', () => result = textarea.value, false);
</script></body></html>`;

const CHECKBOX = `<!DOCTYPE html><html><head><title>Selection Test</title></head><body>
<label for="agree">Remember Me</label>
<div><input id="agree" type="checkbox"></div>
<script>
  window.result = { check: null, events: [] };
  let checkbox = document.querySelector('input');
  for (const name of ['change', 'click', 'dblclick', 'input', 'mousedown', 'mouseup', 'input']) {
    checkbox.addEventListener(name, (event) => result.events.push(event.type), false);
  }
  checkbox.addEventListener('change', () => result.check = checkbox.checked, false);
</script></body></html>`;

const SELECT = `<!DOCTYPE html><html><head><title>Selection Test</title></head><body>
<select>
  <option value="black">Black</option>
  <option value="blue">Blue</option>
  <option value="brown">Brown</option>
  <option value="cyan">Cyan</option>
  <option value="gray">Gray</option>
  <option value="green">Green</option>
  <option value="indigo">Indigo</option>
  <option value="magenta">Magenta</option>
  <option value="orange">Orange</option>
  <option value="pink">Pink</option>
  <option value="purple">Purple</option>
  <option value="red">Red</option>
  <option value="violet">Violet</option>
  <option value="white">White</option>
  <option value="yellow">Yellow</option>
</select>
<script>
  window.result = { onInput: null, onChange: null };
  let select = document.querySelector('select');
  function makeEmpty() { for (let i = select.options.length - 1; i >= 0; --i) select.remove(i); }
  function makeMultiple() { select.setAttribute('multiple', true); }
  select.addEventListener('input', () => {
    result.onInput = Array.from(select.querySelectorAll('option:checked')).map((option) => option.value);
  }, false);
  select.addEventListener('change', () => {
    result.onChange = Array.from(select.querySelectorAll('option:checked')).map((option) => option.value);
  }, false);
</script></body></html>`;

const KEYBOARD = `<!DOCTYPE html><html><head><title>Keyboard test</title></head><body>
<textarea></textarea>
<script>
  window.result = '';
  let textarea = document.querySelector('textarea');
  textarea.focus();
  textarea.addEventListener('keydown', event => log('Keydown:', event.key, event.code, event.which, modifiers(event)));
  textarea.addEventListener('keypress', event => log('Keypress:', event.key, event.code, event.which, event.charCode, modifiers(event)));
  textarea.addEventListener('keyup', event => log('Keyup:', event.key, event.code, event.which, modifiers(event)));
  textarea.addEventListener('input', event => log('input:', event.data, event.inputType, event.isComposing));
  function modifiers(event) {
    let m = [];
    if (event.altKey) m.push('Alt');
    if (event.ctrlKey) m.push('Control');
    if (event.shiftKey) m.push('Shift');
    return '[' + m.join(' ') + ']';
  }
  function log(...args) { result += args.join(' ') + '\\n'; }
  function getResult() { let temp = result.trim(); result = ''; return temp; }
</script></body></html>`;

const SCROLLABLE = `<!DOCTYPE html><html><head><title>Scrollable test</title></head><body>
<script>
  for (let i = 0; i < 100; i++) {
    let button = document.createElement('button');
    button.textContent = i + ': not clicked';
    button.id = 'button-' + i;
    button.onclick = () => button.textContent = 'clicked';
    document.body.appendChild(button);
    document.body.appendChild(document.createElement('br'));
  }
</script></body></html>`;

const PLAYGROUND = `<!DOCTYPE html><html><head><title>Playground</title></head><body>
<button>A button</button>
<textarea>A text area</textarea>
<div id="first">First div</div>
<div id="second">Second div <span class="inner">Inner span</span></div>
</body></html>`;

const GRID = `<!DOCTYPE html><html><head><style>
body { margin: 0; }
.box { display: inline-block; width: 50px; height: 50px; margin: 0; font-size: 12px; }
</style></head><body>
<script>
  for (let i = 0; i < 200; i++) {
    const box = document.createElement('div');
    box.classList.add('box');
    box.style.backgroundColor = 'rgb(' + (i % 255) + ', 100, 150)';
    box.textContent = String(i);
    document.body.appendChild(box);
  }
</script></body></html>`;

const SHADOW = `<!DOCTYPE html><html><body>
<script>
  let h1 = null;
  window.button = null;
  window.clicked = false;
  window.addEventListener('DOMContentLoaded', () => {
    const shadowRoot = document.body.attachShadow({ mode: 'open' });
    h1 = document.createElement('h1');
    h1.textContent = 'Hellow Shadow DOM v1';
    button = document.createElement('button');
    button.textContent = 'Click';
    button.addEventListener('click', () => clicked = true);
    shadowRoot.appendChild(h1);
    shadowRoot.appendChild(button);
  });
</script></body></html>`;

const OFFSCREEN_BUTTONS = `<!DOCTYPE html><html><head><style>
button { position: absolute; width: 100px; height: 20px; }
#btn0 { right: 0px; top: 0; }
#btn1 { right: -10px; top: 25px; }
#btn2 { right: -20px; top: 50px; }
#btn3 { right: -30px; top: 75px; }
#btn4 { right: -40px; top: 100px; }
#btn5 { right: -50px; top: 125px; }
#btn6 { right: -60px; top: 150px; }
#btn7 { right: -70px; top: 175px; }
#btn8 { right: -80px; top: 200px; }
#btn9 { right: -90px; top: 225px; }
#btn10 { right: -100px; top: 250px; }
</style></head><body>
<button id="btn0">0</button><button id="btn1">1</button><button id="btn2">2</button><button id="btn3">3</button>
<button id="btn4">4</button><button id="btn5">5</button><button id="btn6">6</button><button id="btn7">7</button>
<button id="btn8">8</button><button id="btn9">9</button><button id="btn10">10</button>
<script>
  window.addEventListener('DOMContentLoaded', () => {
    for (const button of Array.from(document.querySelectorAll('button')))
      button.addEventListener('click', () => console.log('button #' + button.textContent + ' clicked'), false);
  }, false);
</script></body></html>`;

const FRAME = `<!DOCTYPE html><html><head><link rel="stylesheet" href="./style.css"></head><body>
<div>Hi, I'm frame</div></body></html>`;

const ONE_FRAME = `<!DOCTYPE html><html><body><iframe src="./frame.html"></iframe></body></html>`;

const NESTED_FRAMES = `<!DOCTYPE html><html><head><style>
body { display: flex; } body iframe { flex-grow: 1; flex-shrink: 1; }
</style></head><body>
<iframe src="./two-frames.html" name="2frames"></iframe>
<iframe src="./frame.html" name="aframe"></iframe>
</body></html>`;

const TWO_FRAMES = `<!DOCTYPE html><html><body>
<iframe src="./frame.html" name="uno"></iframe>
<iframe src="./frame.html" name="dos"></iframe>
</body></html>`;

const WRAPPED_LINK = `<!DOCTYPE html><html><head><style>
div { position: absolute; top: 400.5px; left: 300px; width: 120px; font-size: 24px; line-height: 28px; }
</style></head><body>
<div><a href="#clicked">123321</a></div>
<script>window.__clicked = false; document.querySelector('a').addEventListener('click', () => { window.__clicked = true; });</script>
</body></html>`;

const CONSOLE_LOG = `<!DOCTYPE html><html><head><title>console.log test</title></head><body>
<script>console.log('yellow')</script></body></html>`;

const GLOBAL_VAR = `<!DOCTYPE html><html><body><script>var globalVar = 123;</script></body></html>`;

const TAMPERED = `<!DOCTYPE html><html><body><script>
  window.Map = function () {}; window.Set = function () {};
  Object.defineProperty(window, 'JSON', { value: { stringify: () => 'tampered', parse: () => ({}) } });
</script></body></html>`;

const HISTORY_API = `<!DOCTYPE html><html><body><script>
  window.addEventListener('DOMContentLoaded', () => { history.pushState({}, '', '#1'); });
</script></body></html>`;

/** grid.html as Puppeteer's: each box's number drawn with digits/<d>.png images. */
const GRID_IMAGES = `<!DOCTYPE html><html><head><style>
body { margin: 0; }
.box { display: inline-flex; width: 50px; height: 50px; margin: 0; box-sizing: border-box; }
</style></head><body>
<script>
  document.addEventListener('DOMContentLoaded', () => {
    for (let i = 0; i < 200; i++) {
      const box = document.createElement('div');
      box.classList.add('box');
      let x = i;
      do {
        const img = document.createElement('img');
        img.src = './digits/' + (x % 10) + '.png';
        box.insertBefore(img, box.firstChild);
        x = (x / 10) | 0;
      } while (x);
      document.body.appendChild(box);
    }
  });
</script></body></html>`;

const TITLE = `<!DOCTYPE html><html><head><title>Woof-Woof</title></head><body></body></html>`;

const ERROR_PAGE = `<!DOCTYPE html><html><body><script>
  function a() { throw new Error('Fancy error!'); }
  function b() { a(); }
  function c() { b(); }
  setTimeout(c, 0);
</script></body></html>`;

const INPUT_RICH = `<!DOCTYPE html><html><head><title>Rich input</title></head><body>
<div contenteditable="true" id="editable"></div>
<input id="input" type="text">
<input id="number" type="number">
<script>
  window.events = [];
  for (const el of document.querySelectorAll('input, [contenteditable]'))
    for (const t of ['focus', 'blur', 'input', 'change']) el.addEventListener(t, (e) => events.push(e.target.id + ':' + t));
</script></body></html>`;

const CONSOLE_TRACE = `<!DOCTYPE html>
<html>
<head><title>console.trace test</title></head>
<body>
  <script>
    function foo() {
      console.trace('yellow');
    }
    function bar() {
      foo();
    }
    bar();
  </script>
</body>
</html>`;

const WHEEL = `<!DOCTYPE html><html><head><style>
body { min-height: 100vh; margin: 0; display: flex; align-items: center; justify-content: center; }
div { width: 105px; height: 105px; background: #ccc; padding: 5px; transform-origin: center; }
</style></head><body>
<div></div>
<script>
  let scale = 1;
  const el = document.querySelector('div');
  el.onwheel = (event) => {
    event.preventDefault();
    scale += event.deltaY * -0.01;
    scale = Math.min(Math.max(0.125, scale), 4);
    el.style.transform = 'scale(' + scale + ')';
  };
</script></body></html>`;

const MOBILE = `<!DOCTYPE html><html><head>
<meta name="viewport" content="width=device-width, user-scalable=no" />
</head><body>mobile</body></html>`;

const ONE_STYLE = `<!DOCTYPE html><link rel="stylesheet" href="./one-style.css"><div>hello, world!</div>`;

const P_SELECTORS = `<!DOCTYPE html><html><body>
<div id="a">hello <button id="b">world</button><span id="f"></span>
  <div id="c"></div>
</div>
<script>
  const topShadow = document.querySelector('#c');
  topShadow.attachShadow({ mode: 'open' });
  topShadow.shadowRoot.innerHTML = '<div id="d"><div id="e"></div></div>';
</script></body></html>`;

const FILE_UPLOAD = `<!DOCTYPE html><html><head><title>File upload test</title></head><body>
<form action="/upload" method="post" enctype="multipart/form-data">
  <input type="file" name="file1">
  <input type="submit">
</form></body></html>`;

/** abort-request.html: a button whose click starts a fetch and aborts it. */
const ABORT_REQUEST = `<!DOCTYPE html><html><body>
<button id="abort">Abort request</button>
<script>
  document.getElementById('abort').addEventListener('click', () => {
    const controller = new AbortController();
    fetch('./abort-request', { signal: controller.signal }).catch(() => {});
    controller.abort();
  });
</script></body></html>`;

/**
 * Responses held open, as Puppeteer's tests do with server.setRoute(path, () => {}): a request to
 * /stall?k=<key> is answered when /release?k=<key> is requested (or at once if it already was), with
 * the release's `body` as text/html if it has one, else a PNG; /partial?k=<key> sends "hello " at once
 * and the rest at its release; /stall-forever is never answered (its connection ends with the page's
 * context or the server). A key is a script's own random text, so the two sides of a case never
 * release each other's.
 */
const held = new Map<string, (body: string | null) => void>();
const released = new Map<string, string | null>();
const query = (req: IncomingMessage, name: string): string | null =>
  new URL(req.url ?? '/', 'http://x').searchParams.get(name);

function hold(req: IncomingMessage, res: ServerResponse, finish: (body: string | null) => void): void {
  const k = query(req, 'k') ?? '';
  if (released.has(k)) {
    const body = released.get(k) ?? null;
    released.delete(k);
    return finish(body);
  }
  held.set(k, finish);
  res.on('close', () => held.delete(k));
}

function answerHeld(res: ServerResponse, body: string | null): void {
  res.writeHead(200, { 'content-type': body === null ? 'image/png' : 'text/html', 'cache-control': 'no-store' });
  res.end(body ?? PNG);
}

const STALL: Record<string, Route> = {
  '/stall': (req, res) => hold(req, res, (body) => answerHeld(res, body)),
  '/partial': (req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    res.write('hello ');
    hold(req, res, (body) => res.end(body ?? 'world!'));
  },
  '/release': (req, res) => {
    const k = query(req, 'k') ?? '';
    const finish = held.get(k);
    if (finish) {
      held.delete(k);
      finish(query(req, 'body'));
    } else if (released.size < 1000) released.set(k, query(req, 'body'));
    res.writeHead(200, { 'content-type': 'text/plain', 'access-control-allow-origin': '*' });
    res.end('released');
  },
  '/stall-forever': () => undefined,
};

/** A page with a Content-Security-Policy header (Puppeteer's server.setCSP); `policy` may name the page's own origin. */
function withCsp(body: string, policy: (origin: string) => string): Route {
  return (req, res) => {
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': policy(`http://${req.headers.host ?? ''}`),
    });
    res.end(body);
  };
}

/** networkidle.html: three held fetches, then a fourth once they are answered (the page's own key). */
const NETWORK_IDLE = `<!DOCTYPE html><html><body><script>
  const k = new URLSearchParams(location.search).get('k');
  (async () => {
    await Promise.all(['a', 'b', 'c'].map((x) => fetch('/stall?k=' + k + '-' + x).then((r) => r.text())));
    await fetch('/stall?k=' + k + '-d').then((r) => r.text());
  })();
</script></body></html>`;

const INITIATOR = `<!DOCTYPE html><html><body>
<script src="./initiator.js"></script>
<iframe src="./frames/frame.html"></iframe>
</body></html>`;

const INITIATOR_JS = `const script = document.createElement('script');
script.src = './injectedfile.js';
document.body.appendChild(script);
const style = document.createElement('link');
style.rel = 'stylesheet';
style.href = './injectedstyle.css';
document.head.appendChild(style);
`;

/** A response with no body and this status (and status text). */
function bare(status: number, statusText?: string): Route {
  return (_req, res) => {
    res.writeHead(status, statusText ?? '');
    res.end();
  };
}

/** Puppeteer's server.enableGzip: the body gzip-encoded. */
function gzip(type: string, body: Buffer | string): Route {
  const encoded = gzipSync(body);
  return (_req, res) => {
    res.writeHead(200, { 'content-type': type, 'content-encoding': 'gzip' });
    res.end(encoded);
  };
}

/** Puppeteer's server.setAuth: Basic credentials asked for, then the inner route. */
function withAuth(user: string, password: string, inner: Route): Route {
  const expected = 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64');
  return (req, res) => {
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="Secure Area"', 'content-type': 'text/plain' });
      res.end('HTTP Error 401 Unauthorized: Access is denied');
      return;
    }
    inner(req, res);
  };
}

/**
 * /cached/ as Puppeteer's test server serves it: Cache-Control and Last-Modified, and a 304 to a
 * request with If-Modified-Since. What If-Modified-Since each request of ?k=<key> had is kept for
 * /cached/seen?k=<key> (the page's requests as the server saw them).
 */
const LAST_MODIFIED = 'Tue, 01 Jan 2030 00:00:00 GMT';
const seen = new Map<string, (string | null)[]>();
/** /zzz's answers count per key (a script's own), as the test's responseCount. */
const counts = new Map<string, number>();

function cached(type: string, body: string): Route {
  return (req, res) => {
    const k = query(req, 'k');
    const since = req.headers['if-modified-since'] ?? null;
    if (k !== null && (seen.has(k) || seen.size < 1000)) seen.set(k, [...(seen.get(k) ?? []), since]);
    if (since !== null) {
      res.writeHead(304, { 'cache-control': 'public, max-age=10000', 'last-modified': LAST_MODIFIED });
      res.end();
      return;
    }
    res.writeHead(200, {
      'content-type': type,
      'cache-control': 'public, max-age=10000',
      'last-modified': LAST_MODIFIED,
    });
    res.end(body);
  };
}

/** A 302 to `to`, as Puppeteer's test server's setRedirect. */
function redirect(to: string): Route {
  return (_req, res) => {
    res.writeHead(302, { location: to });
    res.end();
  };
}

function css(body: string): Route {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/css' });
    res.end(body);
  };
}

/** A 1×1 transparent PNG, for Puppeteer's digits/*.png and pptr.png. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

function png(): Route {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(PNG);
  };
}

const EMPTY = '<!DOCTYPE html><html><head></head><body></body></html>';

function js(body: string): Route {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/javascript' });
    res.end(body);
  };
}

export const ASSETS: Record<string, Route> = {
  '/empty.html': html(EMPTY),
  ...STALL,
  '/abort-request.html': html(ABORT_REQUEST),
  '/csp.html': html(`<meta http-equiv="Content-Security-Policy" content="default-src 'self'">`),
  // server.setCSP('/empty.html', ...) of page.spec.ts and waittask.spec.ts.
  '/csp-header/empty.html': withCsp(EMPTY, () => 'default-src "self"'),
  '/csp-script/empty.html': withCsp(EMPTY, (origin) => `script-src ${origin}`),
  '/es6/es6import.js': js("import num from './es6module.js';\nwindow.__es6injected = num;\n"),
  '/es6/es6module.js': js('export default 42;\n'),
  '/title.html': html(TITLE),
  '/input/button.html': html(BUTTON),
  '/input/textarea.html': html(TEXTAREA),
  '/input/checkbox.html': html(CHECKBOX),
  '/input/select.html': html(SELECT),
  '/input/keyboard.html': html(KEYBOARD),
  '/input/scrollable.html': html(SCROLLABLE),
  '/input/rich.html': html(INPUT_RICH),
  '/playground.html': html(PLAYGROUND),
  '/grid.html': html(GRID),
  '/shadow.html': html(SHADOW),
  '/offscreenbuttons.html': html(OFFSCREEN_BUTTONS),
  '/frames/frame.html': html(FRAME),
  '/frames/style.css': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/css' });
    res.end('div { color: blue; line-height: 18px; }');
  },
  '/frames/one-frame.html': html(ONE_FRAME),
  '/frames/nested-frames.html': html(NESTED_FRAMES),
  '/frames/two-frames.html': html(TWO_FRAMES),
  '/wrappedlink.html': html(WRAPPED_LINK),
  '/consolelog.html': html(CONSOLE_LOG),
  '/global-var.html': html(GLOBAL_VAR),
  '/tamperedGlobals.html': html(TAMPERED),
  '/historyapi.html': html(HISTORY_API),
  '/error.html': html(ERROR_PAGE),
  '/consoletrace.html': html(CONSOLE_TRACE),
  '/input/wheel.html': html(WHEEL),
  '/input/fileupload.html': html(FILE_UPLOAD),
  '/mobile.html': html(MOBILE),
  '/one-style.html': html(ONE_STYLE),
  '/one-style.css': css('body { background-color: pink; }'),
  '/p-selectors.html': html(P_SELECTORS),
  '/cached/one-style.html': cached('text/html; charset=utf-8', ONE_STYLE),
  '/cached/one-style.css': cached('text/css', 'body { background-color: pink; }'),
  '/cached/seen': (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(seen.get(query(req, 'k') ?? '') ?? []));
  },
  // Puppeteer's setRoute, setRedirect, setAuth and enableGzip of navigation.spec.ts and network.spec.ts.
  '/historyapi-replaceState.html': html(
    `<!DOCTYPE html><html><body><script>history.replaceState({}, '', location.href);</script></body></html>`,
  ),
  '/frames/one-frame-204.html': html(
    `<!DOCTYPE html><html><body><iframe src="./frame-204.html"></iframe></body></html>`,
  ),
  '/frames/frame-204.html': bare(204),
  '/frames/one-frame-stalled.html': html(
    `<!DOCTYPE html><html><body><iframe src="./frame-stalled.html"></iframe></body></html>`,
  ),
  '/frames/frame-stalled.html': html(
    `<!DOCTYPE html><html><head><link rel="stylesheet" href="/stall-forever"></head><body>frame</body></html>`,
  ),
  '/204': bare(204),
  '/404-error': bare(404),
  '/500-error': bare(500),
  '/cool': bare(200, 'cool!'),
  '/nostatus': bare(200, ''),
  '/client-redirect.html': html(
    `<!DOCTYPE html><html><head><meta http-equiv="refresh" content="0; url=./empty.html"></head></html>`,
  ),
  '/networkidle.html': html(NETWORK_IDLE),
  '/self-request.html': html(
    `<!DOCTYPE html><html><body><script>const r = new XMLHttpRequest(); r.open('GET', '/self-request.html'); r.send(null);</script></body></html>`,
  ),
  '/stalled-style.html': (req, res) => {
    const k = encodeURIComponent(query(req, 'k') ?? '');
    html(`<!DOCTYPE html><html><head><link rel="stylesheet" href="/stall?k=${k}"></head><body>styled</body></html>`)(
      req,
      res,
    );
  },
  '/foo-header.html': html(EMPTY, 200, { foo: 'bar' }),
  '/set-cookie.html': html('hello world', 200, { 'set-cookie': 'foo=bar' }),
  '/foo': html('hello world', 200, { 'set-cookie': 'foo=bar' }),
  '/initiator.html': html(INITIATOR),
  '/initiator.js': js(INITIATOR_JS),
  '/gzip/simple.json': gzip('application/json', '{"foo": "bar"}\n'),
  '/gzip/pptr.png': gzip('image/png', PNG),
  '/cors.html': (_req, res) => {
    res.writeHead(200, { 'access-control-allow-origin': '*', 'access-control-allow-headers': 'x-ping' });
    res.end('Hello World');
  },
  '/rrredirect-frame': redirect('/frames/one-frame.html'),
  '/frames/frameset.html': html(`<!DOCTYPE html><frameset rows="25%,25%,25%,25%">
  <frame src="./frame.html"><frame src="about:blank"><frame src="/empty.html"><frame>
</frameset>`),
  '/frames/one-frame-url-fragment.html': html(
    `<!DOCTYPE html><html><body><iframe src="./frame.html?param=value#fragment"></iframe></body></html>`,
  ),
  '/input/rotatedButton.html': html(`<!DOCTYPE html><html><head><title>Rotated button test</title></head><body>
<button onclick="clicked();" style="transform: rotateY(180deg)">Click target</button>
<script>
  window.result = 'Was not clicked';
  function clicked() { result = 'Clicked'; }
</script></body></html>`),
  // A stand-in for Modernizr's touch test, all the emulation tests read of it.
  '/modernizr.js': js(
    "window.Modernizr = { touchevents: 'ontouchstart' in window || (window.DocumentTouch !== undefined && document instanceof DocumentTouch) };",
  ),
  '/detect-touch.html':
    html(`<!DOCTYPE html><html><head><title>Detect Touch Test</title><script src="./modernizr.js"></script></head>
<body style="font-size: 30vmin"><script>document.body.textContent = Modernizr.touchevents ? 'YES' : 'NO';</script></body></html>`),
  '/picture.html': html(
    `<!DOCTYPE html><img srcset="./digits/1.png 1x, ./digits/2.png 2x, ./digits/3.png 3x" src="./digits/1.png">`,
  ),
  '/pdf.html': html(`<!DOCTYPE html><html><body><div>PDF</div><img src="/stall-forever"></body></html>`),
  '/serviceworkers/fetch/sw.html': html(`<!DOCTYPE html><link rel="stylesheet" href="./style.css"><script>
  window.registrationPromise = navigator.serviceWorker.register('sw.js');
  window.activationPromise = new Promise((resolve) => (navigator.serviceWorker.oncontrollerchange = resolve));
</script>`),
  '/serviceworkers/fetch/sw.js': js(
    "self.addEventListener('fetch', (event) => event.respondWith(fetch(event.request)));\nself.addEventListener('activate', (event) => event.waitUntil(clients.claim()));\n",
  ),
  '/serviceworkers/fetch/style.css': css('body { background-color: pink; }'),
  '/resetcss.html': html(
    `<!DOCTYPE html><style>html, body, div, iframe { margin: 0; padding: 0; border: 0; font-size: 100%; vertical-align: baseline; }</style>`,
  ),
  '/inline-svg.html': html(`<!DOCTYPE html><html><body>
<svg width="100" height="100"><circle cx="50" cy="50" r="40" stroke="green" stroke-width="4" fill="yellow" /></svg>
<div style="display: none"><svg width="100" height="100"><circle cx="50" cy="50" r="40" fill="yellow" /></svg></div>
</body></html>`),
  // requestinterception.spec.ts's setRoute and setRedirect.
  '/echo-headers': (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(req.headers));
  },
  '/logo.png': redirect('/pptr.png'),
  '/redirect-style.html': html(`<!DOCTYPE html><link rel="stylesheet" href="/r1.css"><div>hello, world!</div>`),
  '/r1.css': redirect('/r2.css'),
  '/r2.css': redirect('/r3.css'),
  '/r3.css': redirect('/r4.css'),
  '/r4.css': css('body {box-sizing: border-box; }'),
  '/zzz': (req, res) => {
    const k = query(req, 'k') ?? '';
    const n = (counts.get(k) ?? 0) + 1;
    if (counts.has(k) || counts.size < 1000) counts.set(k, n);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(String(n * 11));
  },
  '/malformed': bare(200),
  '/cached/one-style-font.html': cached(
    'text/html; charset=utf-8',
    `<!DOCTYPE html><style>@font-face { font-family: thing; src: url(./one-style.woff); } body { font-family: thing; }</style><div>hello, world!</div>`,
  ),
  '/cached/one-style.woff': cached('font/woff', 'wOFF'),
  '/foo.html': redirect('/empty.html'),
  '/auth1/empty.html': withAuth('user', 'pass', html(EMPTY)),
  '/auth2/empty.html': withAuth('user2', 'pass2', html(EMPTY)),
  '/auth3/empty.html': withAuth('user3', 'pass3', html(EMPTY)),
  '/auth4/cached/one-style.html': withAuth('user4', 'pass4', cached('text/html; charset=utf-8', ONE_STYLE)),
  '/auth4/cached/one-style.css': withAuth('user4', 'pass4', cached('text/css', 'body { background-color: pink; }')),
  // Puppeteer's tests set these with server.setRoute / setRedirect before navigating.
  '/cookies/httponly.html': html('<!DOCTYPE html>', 200, { 'set-cookie': 'a=b; HttpOnly; Path=/' }),
  '/cookies/strict.html': html('<!DOCTYPE html>', 200, { 'set-cookie': 'a=b; SameSite=Strict' }),
  '/cookies/lax.html': html('<!DOCTYPE html>', 200, { 'set-cookie': 'a=b; SameSite=Lax' }),
  '/non-existing-page.html': redirect('/non-existing-page-2.html'),
  '/non-existing-page-2.html': redirect('/non-existing-page-3.html'),
  '/non-existing-page-3.html': redirect('/non-existing-page-4.html'),
  '/non-existing-page-4.html': redirect('/empty.html'),
  '/rrredirect': redirect('/headers.json'),
  '/rredirect': redirect('/empty.html'),
  '/non-existing.json': redirect('/non-existing-2.json'),
  '/non-existing-2.json': redirect('/simple.json'),
  '/simple.json': (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"foo": "bar"}\n');
  },
  '/redirect/1.html': (_req, res) => {
    res.writeHead(302, { location: '/redirect/2.html' });
    res.end();
  },
  '/redirect/2.html': html('<!DOCTYPE html><html><body>redirected</body></html>'),
  '/404': html('<!DOCTYPE html><title>nope</title>', 404),
  '/headers.json': (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-answer': '42' });
    res.end(
      JSON.stringify({
        ua: req.headers['user-agent'] ?? null,
        foo: req.headers['foo'] ?? null,
        referer: req.headers.referer ?? null,
        cookie: req.headers.cookie ?? null,
      }),
    );
  },
  '/post': (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`${req.method} ${body}`);
    });
  },
  ...Object.fromEntries([...Array(10).keys()].map((d) => [`/digits/${d}.png`, png()])),
  '/grid-images.html': html(GRID_IMAGES),
  '/pptr.png': png(),
  '/injectedfile.js': js("window.__injected = 42;\nwindow.__injectedError = new Error('hi');"),
  '/injectedstyle.css': css('body { background-color: red; }'),
};
