// The playground page's script: reads the form, calls POST /api/scrape of the
// service that served the page, and shows the answer. Results are only ever put
// into the page as text (textContent), never as HTML: a script's result and a
// page's HTML are hostile.
import './style.css';
import { curlCommand, requestBody } from './curl.js';
import { createEditor } from './editor.js';
import { EXAMPLES } from './examples.js';
import { errorLocation, parseServerTiming, parseUsage } from './result.js';

/** sessionStorage keys. SECURITY: the key lives in this tab's sessionStorage only (never localStorage, a cookie or the URL). */
const STORE = {
  key: 'pagescript.key',
  host: 'pagescript.gatewayHost',
  url: 'pagescript.url',
  script: 'pagescript.script',
  format: 'pagescript.format',
};
/** The page gives up on an answer after this long; the service's own limits are shorter. */
const REQUEST_DEADLINE_MS = 300_000;

function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`the playground page has no #${id}`);
  return el as T;
}

function load(name: string): string | null {
  try {
    return sessionStorage.getItem(name);
  } catch {
    return null; // storage disabled: the page still works, it just forgets
  }
}

function save(name: string, value: string): void {
  try {
    sessionStorage.setItem(name, value);
  } catch {
    // storage disabled or full
  }
}

// The nonce of this page's CSP, for the <style> CodeMirror adds (read while this script runs).
const nonce = (document.currentScript as HTMLScriptElement | null)?.nonce || undefined;

const form = byId<HTMLFormElement>('pg-form');
const exampleSelect = byId<HTMLSelectElement>('pg-example');
const urlInput = byId<HTMLInputElement>('pg-url');
const keyInput = byId<HTMLInputElement>('pg-key');
const hostInput = byId<HTMLInputElement>('pg-host');
const runButton = byId<HTMLButtonElement>('pg-run');
const curlButton = byId<HTMLButtonElement>('pg-curl-copy');
const curlWithKey = byId<HTMLInputElement>('pg-curl-key');
const curlText = byId<HTMLTextAreaElement>('pg-curl');
const curlStatus = byId<HTMLElement>('pg-curl-status');
const statusLine = byId<HTMLElement>('pg-status');
const errorBox = byId<HTMLElement>('pg-error');
const errorText = byId<HTMLElement>('pg-error-text');
const errorGoto = byId<HTMLButtonElement>('pg-error-goto');
const timingBox = byId<HTMLElement>('pg-timing');
const execTime = byId<HTMLElement>('pg-exec-time');
const timingList = byId<HTMLElement>('pg-timing-parts');
const usageList = byId<HTMLElement>('pg-usage');
const dataBox = byId<HTMLElement>('pg-data');
const dataLabel = byId<HTMLElement>('pg-data-label');
const dataSection = byId<HTMLElement>('pg-data-box');
const logsList = byId<HTMLOListElement>('pg-logs');
const logsEmpty = byId<HTMLElement>('pg-logs-empty');

const firstExample = EXAMPLES[0];
for (const ex of EXAMPLES) exampleSelect.add(new Option(ex.title, ex.id));

const editor = createEditor({
  parent: byId('pg-editor'),
  doc: load(STORE.script) ?? firstExample?.script ?? '',
  labelledBy: 'pg-script-label',
  describedBy: 'pg-script-help',
  nonce,
  onChange: () => {
    save(STORE.script, editor.getScript());
    updateCurl();
  },
});

function format(): 'json' | 'html' {
  return (form.elements.namedItem('format') as RadioNodeList).value === 'html' ? 'html' : 'json';
}

function setFormat(f: 'json' | 'html'): void {
  (form.elements.namedItem('format') as RadioNodeList).value = f;
}

urlInput.value = load(STORE.url) ?? firstExample?.url ?? '';
keyInput.value = load(STORE.key) ?? '';
hostInput.value = load(STORE.host) ?? location.hostname;
setFormat(load(STORE.format) === 'html' ? 'html' : 'json');

const endpoint = (): string => new URL('api/scrape', location.href).href;

function updateCurl(): void {
  curlText.value = curlCommand({
    endpoint: endpoint(),
    url: urlInput.value.trim(),
    script: editor.getScript(),
    outputFormat: format(),
    key: curlWithKey.checked ? keyInput.value.trim() : undefined,
    gatewayHost: hostInput.value.trim(),
  });
}

exampleSelect.addEventListener('change', () => {
  const ex = EXAMPLES.find((e) => e.id === exampleSelect.value);
  if (!ex) return;
  urlInput.value = ex.url;
  editor.setScript(ex.script);
  setFormat(ex.outputFormat);
  save(STORE.url, ex.url);
  save(STORE.format, ex.outputFormat);
  updateCurl();
});
urlInput.addEventListener('input', () => {
  save(STORE.url, urlInput.value);
  updateCurl();
});
keyInput.addEventListener('input', () => {
  save(STORE.key, keyInput.value);
  updateCurl();
});
hostInput.addEventListener('input', () => {
  save(STORE.host, hostInput.value);
  updateCurl();
});
form.addEventListener('change', (e) => {
  if ((e.target as HTMLInputElement).name === 'format') save(STORE.format, format());
  updateCurl();
});

// ------------------------------------------------------------ the result
function clearResult(): void {
  errorBox.hidden = true;
  errorText.textContent = '';
  errorGoto.hidden = true;
  timingBox.hidden = true;
  timingList.replaceChildren();
  usageList.replaceChildren();
  dataBox.textContent = '';
  dataSection.hidden = true;
  logsList.replaceChildren();
  logsEmpty.hidden = false;
  editor.markError(undefined);
}

function showLogs(logs: unknown): void {
  const lines = Array.isArray(logs) ? logs.map(String) : [];
  logsList.replaceChildren(
    ...lines.map((l) => {
      const li = document.createElement('li');
      li.textContent = l;
      return li;
    }),
  );
  logsEmpty.hidden = lines.length > 0;
}

function showTimings(res: Response, executionTime: unknown): void {
  const parts = parseServerTiming(res.headers.get('server-timing'));
  const usage = parseUsage((h) => res.headers.get(h));
  if (parts.length === 0 && usage.length === 0 && typeof executionTime !== 'number') return;
  timingBox.hidden = false;
  usageList.replaceChildren(
    ...usage.flatMap((u) => {
      const dt = document.createElement('dt');
      dt.textContent = u.label;
      const dd = document.createElement('dd');
      dd.dataset.header = u.header;
      dd.textContent = u.text;
      return [dt, dd];
    }),
  );
  execTime.textContent = typeof executionTime === 'number' ? `${executionTime} ms` : '—';
  const total = parts.reduce((s, p) => s + p.ms, 0) || 1;
  timingList.replaceChildren(
    ...parts.map((p) => {
      const row = document.createElement('li');
      row.dataset.part = p.name;
      const name = document.createElement('span');
      name.className = 'pg-timing-name';
      name.textContent = p.name;
      const bar = document.createElement('span');
      bar.className = 'pg-timing-bar';
      // CSSOM, not a style attribute: allowed by the page's CSP.
      bar.style.width = `${Math.max(0.5, (p.ms / total) * 100).toFixed(1)}%`;
      const ms = document.createElement('span');
      ms.className = 'pg-timing-ms';
      ms.textContent = `${p.ms.toFixed(1)} ms`;
      row.append(name, bar, ms);
      return row;
    }),
  );
}

function showError(status: number, body: Record<string, unknown>, scriptLines: number): void {
  const code = typeof body.code === 'string' ? body.code : 'ERROR';
  const message = typeof body.error === 'string' ? body.error : 'the service gave no message';
  statusLine.textContent = `${status} ${code}`;
  statusLine.dataset.outcome = 'error';
  errorBox.hidden = false;
  errorText.textContent = message;
  const where = errorLocation(body, scriptLines);
  editor.markError(where, message);
  errorBox.dataset.line = where ? String(where.line) : '';
  if (where) {
    errorGoto.hidden = false;
    errorGoto.textContent = `Go to line ${where.line}`;
    errorGoto.onclick = () => editor.goToLine(where.line);
  }
  showLogs(body.logs);
}

let running = false;

/** run() handles its own failures; anything that still escapes is shown, not lost. */
function runNow(): void {
  run().catch((e: unknown) => {
    statusLine.textContent = `The playground failed: ${String(e)}`;
  });
}

async function run(): Promise<void> {
  if (running) return;
  const url = urlInput.value.trim();
  if (url === '') {
    statusLine.textContent = 'Enter a URL first.';
    urlInput.focus();
    return;
  }
  running = true;
  runButton.disabled = true;
  runButton.textContent = 'Running…';
  clearResult();
  statusLine.dataset.outcome = 'running';
  statusLine.textContent = 'Running…';
  const script = editor.getScript();
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  const key = keyInput.value.trim();
  if (key !== '') headers['X-Gateway-Key'] = key;
  if (hostInput.value.trim() !== '') headers['X-Gateway-Host'] = hostInput.value.trim();
  try {
    const res = await fetch(endpoint(), {
      method: 'POST',
      headers,
      body: requestBody({ url, script, outputFormat: format() }),
      credentials: 'omit',
      cache: 'no-store',
      signal: AbortSignal.timeout(REQUEST_DEADLINE_MS),
    });
    const text = await res.text();
    const isJson = (res.headers.get('content-type') ?? '').startsWith('application/json');
    let body: Record<string, unknown> = {};
    if (isJson) {
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        body = {};
      }
    }
    statusLine.dataset.requestId = res.headers.get('x-request-id') ?? '';
    if (!res.ok) {
      showError(res.status, body, editor.view.state.doc.lines);
      return;
    }
    statusLine.dataset.outcome = 'ok';
    dataSection.hidden = false;
    if (isJson) {
      statusLine.textContent = `${res.status} ${typeof body.message === 'string' ? body.message : 'OK'}`;
      dataLabel.textContent = 'Data (JSON)';
      dataBox.textContent =
        'data' in body ? JSON.stringify(body.data, null, 2) : 'undefined — the script returned nothing';
      showLogs(body.logs);
      showTimings(res, body.executionTime);
    } else {
      statusLine.textContent = `${res.status} OK (HTML)`;
      dataLabel.textContent = 'Data (HTML, shown as text)';
      dataBox.textContent = text;
      showTimings(res, undefined);
    }
  } catch (e) {
    statusLine.dataset.outcome = 'error';
    statusLine.textContent = 'No answer from the service';
    errorBox.hidden = false;
    errorText.textContent = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  } finally {
    running = false;
    runButton.disabled = false;
    runButton.textContent = 'Run';
  }
}

form.addEventListener('submit', (e) => {
  e.preventDefault();
  runNow();
});
// Ctrl/Cmd+Enter runs from anywhere, the editor included (captured before CodeMirror sees it).
document.addEventListener(
  'keydown',
  (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && !e.altKey) {
      e.preventDefault();
      e.stopPropagation();
      runNow();
    }
  },
  { capture: true },
);

// ------------------------------------------------------------ copy as curl
curlWithKey.addEventListener('change', updateCurl);
curlButton.addEventListener('click', () => {
  updateCurl();
  const done = (how: string): void => {
    curlStatus.textContent = how;
  };
  // navigator.clipboard is missing where the page is not a secure context.
  const clipboard = window.isSecureContext ? navigator.clipboard : undefined;
  (clipboard ? clipboard.writeText(curlText.value) : Promise.reject(new Error('no clipboard')))
    .then(() => done('Copied to the clipboard.'))
    .catch(() => {
      // No clipboard (a page served over plain http to another host): select it for Ctrl+C.
      curlText.focus();
      curlText.select();
      done('Selected: press Ctrl+C (or Cmd+C) to copy.');
    });
});

updateCurl();
document.documentElement.dataset.ready = 'true';
