// "Copy as curl": the playground's request as one shell command. The script goes
// as scriptBase64, so quotes, backticks, `$`, newlines and non-ASCII text all
// survive any shell; every other value is single-quoted.

export interface CurlRequest {
  /** The address of POST /api/scrape, e.g. http://127.0.0.1:3000/api/scrape. */
  readonly endpoint: string;
  readonly url: string;
  readonly script: string;
  readonly outputFormat: 'json' | 'html';
  /** The key itself, or undefined to leave "$KEY" for the shell to fill in. */
  readonly key: string | undefined;
  readonly gatewayHost: string;
}

/** POSIX single quotes: nothing inside is special, and ' is written as '\''. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Base64 of the script's UTF-8 bytes (btoa alone takes only Latin-1). */
export function base64Utf8(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** The JSON body the playground sends; an empty script is left out (the reachability check). */
export function requestBody(r: Pick<CurlRequest, 'url' | 'script' | 'outputFormat'>): string {
  const body: Record<string, string> = { url: r.url };
  if (r.script.trim() !== '') body.scriptBase64 = base64Utf8(r.script);
  if (r.outputFormat !== 'json') body.outputFormat = r.outputFormat;
  return JSON.stringify(body);
}

export function curlCommand(r: CurlRequest): string {
  // "$KEY" in double quotes: the shell expands it and nothing else.
  const key = r.key === undefined ? `"X-Gateway-Key: $KEY"` : shellQuote(`X-Gateway-Key: ${r.key}`);
  return [
    `curl -sS ${shellQuote(r.endpoint)}`,
    `-H ${key}`,
    `-H ${shellQuote(`X-Gateway-Host: ${r.gatewayHost}`)}`,
    `-H 'Content-Type: application/json'`,
    `--data-raw ${shellQuote(requestBody(r))}`,
  ].join(' \\\n  ');
}
