// GET /docs: the OpenAPI document rendered for a person, on the server, as one
// self-contained HTML page (no script, no CDN, no request beyond itself).

type Json = Record<string, unknown>;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const esc = (v: unknown): string => String(v ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
/** Escaped text with Markdown's `code spans` (as OpenAPI descriptions have them) rendered as code. */
const md = (v: unknown): string => esc(v).replace(/`([^`]+)`/g, '<code>$1</code>');

/** Served with the page: nothing may load, only the inline style applies. */
export const DOCS_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
code,pre{font-family:ui-monospace,monospace;font-size:13px}pre{background:#f4f5f7;padding:.75rem;overflow:auto}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1.5rem}th,td{border:1px solid #d0d4da;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f5f7}h2{border-bottom:2px solid #d0d4da;padding-bottom:.2rem;margin-top:2.5rem}.m{font-weight:700;color:#0b5cad}
td code{white-space:nowrap}tr:target{background:#fff8c5}nav ol{margin:.3rem 0}nav li{margin:.1rem 0}a{color:#0b5cad}`;

function schemaType(s: Json | undefined): string {
  if (!s) return '';
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (Array.isArray(s.type)) return s.type.join(' | ');
  if (typeof s.$ref === 'string') return s.$ref.split('/').pop() ?? '';
  if (Array.isArray(s.oneOf)) return (s.oneOf as Json[]).map(schemaType).join(' or ');
  if (s.type === 'array' && s.items) return `array of ${schemaType(s.items as Json)}`;
  return String(s.type ?? 'any');
}

function fieldsTable(schema: Json): string {
  const props = (schema.properties ?? {}) as Record<string, Json>;
  const required = new Set((schema.required ?? []) as string[]);
  const rows = Object.entries(props)
    .map(
      ([name, p]) =>
        `<tr><td><code>${esc(name)}</code></td><td>${esc(schemaType(p))}</td><td>${required.has(name) ? 'yes' : 'no'}</td><td>${md(p.description)}</td></tr>`,
    )
    .join('');
  return `<table><tr><th>Field</th><th>Type</th><th>Required</th><th>Meaning</th></tr>${rows}</table>`;
}

interface CodeInfo {
  status: number;
  message: string;
  meaning: string;
  action: string;
}

/** The codes an error response can carry (its schema's code enum); none for other responses. */
function responseCodes(r: Json): string[] {
  const schema = (((r.content ?? {}) as Json)['application/json'] as Json | undefined)?.schema as Json | undefined;
  const code = ((schema?.properties ?? {}) as Json).code as Json | undefined;
  return Array.isArray(code?.enum) ? (code.enum as string[]) : [];
}

const headerList = (r: Json): string =>
  Object.keys((r.headers ?? {}) as Json)
    .filter((h) => h !== 'X-Request-Id' && !h.startsWith('RateLimit-'))
    .map((h) => `<code>${esc(h)}</code>`)
    .join(', ');

/** One error code as a table row: code (linked to its entry in Errors), status, meaning, what to do. */
function codeRow(code: string, c: CodeInfo | undefined, extra = ''): string {
  return `<tr><td><a href="#err-${esc(code)}"><code>${esc(code)}</code></a></td><td>${esc(c?.status)}</td><td>${md(c?.meaning)}</td><td>${md(c?.action)}</td>${extra}</tr>`;
}

const opId = (path: string, method: string, op: Json): string =>
  `op-${String(op.operationId ?? `${method}${path}`).replace(/[^\w-]/g, '-')}`;

function operation(path: string, method: string, op: Json, codes: Record<string, CodeInfo>): string {
  const params = ((op.parameters ?? []) as Json[])
    .map(
      (p) =>
        `<tr><td><code>${esc(p.name)}</code></td><td>${esc(p.in)}</td><td>${p.required ? 'yes' : 'no'}</td><td>${md(p.description)}</td></tr>`,
    )
    .join('');
  const all = Object.entries((op.responses ?? {}) as Record<string, Json>);
  const responses = all
    .filter(([, r]) => responseCodes(r).length === 0)
    .map(([status, r]) => {
      const types = Object.keys((r.content ?? {}) as Json).join(', ');
      return `<tr><td>${esc(status)}</td><td>${md(r.description)}</td><td>${esc(types)}</td><td>${headerList(r)}</td></tr>`;
    })
    .join('');
  // One row per error code, not one cell per status listing them all.
  const errors = all
    .flatMap(([, r]) => responseCodes(r).map((code) => codeRow(code, codes[code], `<td>${headerList(r)}</td>`)))
    .join('');
  return `<h3 id="${opId(path, method, op)}"><span class="m">${esc(method.toUpperCase())}</span> <code>${esc(path)}</code> — ${md(op.summary)}</h3>
${params ? `<table><tr><th>Parameter</th><th>In</th><th>Required</th><th>Meaning</th></tr>${params}</table>` : ''}
<table><tr><th>Status</th><th>When</th><th>Body</th><th>Headers</th></tr>${responses}</table>
${errors ? `<table><tr><th>Error code</th><th>HTTP</th><th>Meaning</th><th>What to do</th><th>Headers</th></tr>${errors}</table>` : ''}`;
}

export function renderDocs(doc: Json): string {
  const info = doc.info as Json;
  const schemas = (doc.components as Json).schemas as Record<string, Json>;
  const paths = doc.paths as Record<string, Record<string, Json>>;
  const codes = ((schemas.ErrorCode ?? {})['x-codes'] ?? {}) as Record<string, CodeInfo>;
  const limits = (doc['x-pagescript-limits'] ?? {}) as Record<string, number>;
  const opList = Object.entries(paths).flatMap(([p, methods]) =>
    Object.entries(methods).map(([m, op]) => ({ p, m, op })),
  );
  const ops = opList.map(({ p, m, op }) => operation(p, m, op, codes)).join('\n');
  const opToc = opList
    .map(({ p, m, op }) => `<li><a href="#${opId(p, m, op)}">${esc(m.toUpperCase())} <code>${esc(p)}</code></a></li>`)
    .join('');
  const errorRows = Object.entries(codes)
    .map(
      ([code, c]) =>
        `<tr id="err-${esc(code)}"><td><code>${esc(code)}</code></td><td>${esc(c.status)}</td><td>${md(c.meaning)}</td><td>${md(c.action)}</td><td>${esc(c.message)}</td></tr>`,
    )
    .join('');
  const playground =
    paths['/playground'] !== undefined
      ? '<p>Try a script in your browser: <a href="playground">the playground</a>.</p>'
      : '';
  const limitRows = Object.entries(limits)
    .map(([k, v]) => `<tr><td><code>${esc(k)}</code></td><td>${esc(v)}</td></tr>`)
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(info.title)} ${esc(info.version)} — API</title><style>${STYLE}</style></head>
<body>
<h1>${esc(info.title)} <small>${esc(info.version)}</small></h1>
<p>${md(info.summary)}</p>
<p>${md(info.description)}</p>
${playground}
<p>The machine-readable document: <a href="openapi.json"><code>/openapi.json</code></a> (OpenAPI 3.1).</p>
<nav aria-labelledby="toc"><h2 id="toc">Contents</h2><ol>
<li><a href="#example">Example</a></li>
<li><a href="#operations">Operations</a><ol>${opToc}</ol></li>
<li><a href="#request">Request body of POST /api/scrape</a></li>
<li><a href="#options">Request options</a></li>
<li><a href="#success">JSON success body</a></li>
<li><a href="#errors">Errors</a></li>
<li><a href="#error-body">Error body</a></li>
<li><a href="#limits">Limits of this instance</a></li>
</ol></nav>
<h2 id="example">Example</h2>
<pre>curl -s http://HOST:PORT/api/scrape -H 'X-Gateway-Key: KEY' -H 'Content-Type: application/json' \\
  -d '{"url":"https://example.com","script":"return await page.title()"}'</pre>
<h2 id="operations">Operations</h2>
${ops}
<h2 id="request">Request body of POST /api/scrape</h2>
${fieldsTable(schemas.ScrapeRequest ?? {})}
<h2 id="options">Request options</h2>
<p>${md(schemas.RequestOptions?.description)}</p>
${fieldsTable(schemas.RequestOptions ?? {})}
<h2 id="success">JSON success body</h2>
${fieldsTable(schemas.ScrapeSuccess ?? {})}
<h2 id="errors">Errors</h2>
<p>Every error is JSON <code>{"error", "code", "statusCode"}</code>. Match on <code>code</code>.</p>
<table><tr><th>Code</th><th>HTTP</th><th>Meaning</th><th>What to do</th><th>Message</th></tr>${errorRows}</table>
<h2 id="error-body">Error body</h2>
<p>A failed script or page load says where and why in the fields after <code>statusCode</code>.</p>
${fieldsTable(schemas.Error ?? {})}
<h2 id="limits">Limits of this instance</h2>
<table><tr><th>Limit</th><th>Value</th></tr>${limitRows}</table>
</body></html>
`;
}
