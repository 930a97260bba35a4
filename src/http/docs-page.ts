// GET /docs: the OpenAPI document rendered for a person, on the server, as one
// self-contained HTML page (no script, no CDN, no request beyond itself).

type Json = Record<string, unknown>;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const esc = (v: unknown): string => String(v ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);

/** Served with the page: nothing may load, only the inline style applies. */
export const DOCS_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
code,pre{font-family:ui-monospace,monospace;font-size:13px}pre{background:#f4f5f7;padding:.75rem;overflow:auto}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1.5rem}th,td{border:1px solid #d0d4da;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f5f7}h2{border-bottom:2px solid #d0d4da;padding-bottom:.2rem;margin-top:2.5rem}.m{font-weight:700;color:#0b5cad}`;

function schemaType(s: Json | undefined): string {
  if (!s) return '';
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (Array.isArray(s.type)) return s.type.join(' | ');
  if (typeof s.$ref === 'string') return s.$ref.split('/').pop() ?? '';
  return String(s.type ?? 'any');
}

function fieldsTable(schema: Json): string {
  const props = (schema.properties ?? {}) as Record<string, Json>;
  const required = new Set((schema.required ?? []) as string[]);
  const rows = Object.entries(props)
    .map(
      ([name, p]) =>
        `<tr><td><code>${esc(name)}</code></td><td>${esc(schemaType(p))}</td><td>${required.has(name) ? 'yes' : 'no'}</td><td>${esc(p.description)}</td></tr>`,
    )
    .join('');
  return `<table><tr><th>Field</th><th>Type</th><th>Required</th><th>Meaning</th></tr>${rows}</table>`;
}

function operation(path: string, method: string, op: Json): string {
  const params = ((op.parameters ?? []) as Json[])
    .map(
      (p) =>
        `<tr><td><code>${esc(p.name)}</code></td><td>${esc(p.in)}</td><td>${p.required ? 'yes' : 'no'}</td><td>${esc(p.description)}</td></tr>`,
    )
    .join('');
  const responses = Object.entries((op.responses ?? {}) as Record<string, Json>)
    .map(([status, r]) => {
      const headers = Object.keys((r.headers ?? {}) as Json)
        .map((h) => `<code>${esc(h)}</code>`)
        .join(', ');
      const types = Object.keys((r.content ?? {}) as Json).join(', ');
      return `<tr><td>${esc(status)}</td><td>${esc(r.description)}</td><td>${esc(types)}</td><td>${headers}</td></tr>`;
    })
    .join('');
  return `<h3><span class="m">${esc(method.toUpperCase())}</span> <code>${esc(path)}</code> — ${esc(op.summary)}</h3>
${params ? `<table><tr><th>Parameter</th><th>In</th><th>Required</th><th>Meaning</th></tr>${params}</table>` : ''}
<table><tr><th>Status</th><th>When</th><th>Body</th><th>Headers</th></tr>${responses}</table>`;
}

export function renderDocs(doc: Json): string {
  const info = doc.info as Json;
  const schemas = (doc.components as Json).schemas as Record<string, Json>;
  const paths = doc.paths as Record<string, Record<string, Json>>;
  const codes = ((schemas.ErrorCode ?? {})['x-codes'] ?? {}) as Record<
    string,
    { status: number; message: string; meaning: string }
  >;
  const limits = (doc['x-pagescript-limits'] ?? {}) as Record<string, number>;
  const ops = Object.entries(paths)
    .flatMap(([p, methods]) => Object.entries(methods).map(([m, op]) => operation(p, m, op)))
    .join('\n');
  const errorRows = Object.entries(codes)
    .map(
      ([code, c]) =>
        `<tr><td><code>${esc(code)}</code></td><td>${esc(c.status)}</td><td>${esc(c.message)}</td><td>${esc(c.meaning)}</td></tr>`,
    )
    .join('');
  const limitRows = Object.entries(limits)
    .map(([k, v]) => `<tr><td><code>${esc(k)}</code></td><td>${esc(v)}</td></tr>`)
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(info.title)} ${esc(info.version)} — API</title><style>${STYLE}</style></head>
<body>
<h1>${esc(info.title)} <small>${esc(info.version)}</small></h1>
<p>${esc(info.summary)}</p>
<p>${esc(info.description)}</p>
<p>The machine-readable document: <a href="openapi.json"><code>/openapi.json</code></a> (OpenAPI 3.1).</p>
<h2>Example</h2>
<pre>curl -s http://HOST:PORT/api/scrape -H 'X-Gateway-Key: KEY' -H 'Content-Type: application/json' \\
  -d '{"url":"https://example.com","script":"return await page.title()"}'</pre>
<h2>Operations</h2>
${ops}
<h2>Request body of POST /api/scrape</h2>
${fieldsTable(schemas.ScrapeRequest ?? {})}
<h2>JSON success body</h2>
${fieldsTable(schemas.ScrapeSuccess ?? {})}
<h2>Errors</h2>
<p>Every error is JSON <code>{"error", "code", "statusCode"}</code>. Match on <code>code</code>.</p>
<table><tr><th>Code</th><th>HTTP</th><th>Message</th><th>Meaning</th></tr>${errorRows}</table>
<h2>Limits of this instance</h2>
<table><tr><th>Limit</th><th>Value</th></tr>${limitRows}</table>
</body></html>
`;
}
