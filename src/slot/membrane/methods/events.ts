// The handles page events bring: requests (intercepted ones continued, answered
// or aborted, a rewritten URL checked like a navigation), responses, dialogs and
// console messages.
import type { ConsoleMessage, Dialog, HTTPRequest, HTTPResponse } from 'puppeteer';
import { isTagged } from '../../../../sandbox/wire.js';
import { MembraneError, clampNum, isPlainObject, options, str } from '../options.js';
import type { Table } from './context.js';

const RESPONSE_BODY = ['text', 'json', 'buffer', 'content'] as const;

/** respond()'s headers as Puppeteer takes them: a value is a string, a number, a boolean or an array of strings (one header each). */
function responseHeaders(value: unknown, where: string): Record<string, unknown> {
  if (!isPlainObject(value)) throw new MembraneError(`${where} must be an object`);
  const ok = (x: unknown): boolean => ['string', 'number', 'boolean'].includes(typeof x);
  for (const [k, x] of Object.entries(value)) {
    if (!(ok(x) || (Array.isArray(x) && x.every(ok))))
      throw new MembraneError(`${where}: "${k}" must be a string, a number or an array of strings`);
  }
  return Object.fromEntries(Object.entries(value).map(([k, x]) => [k, Array.isArray(x) ? x.map(String) : x]));
}

export const REQUEST: Table<HTTPRequest> = {
  fetchPostData: (r) => r.fetchPostData(),
  abort: (r, [code]) => r.abort(code === undefined ? undefined : (str(code, 'request.abort: errorCode') as never)),
  continue: async (r, [overrides], c) => {
    if (overrides === undefined) return r.continue();
    const o = options(
      overrides,
      { url: 'string', method: 'string', postData: 'string', headers: 'record' },
      c.clock,
      'request.continue',
    );
    // SECURITY: a rewritten URL is checked like a navigation; the egress guard checks it again.
    if (typeof o.url === 'string') o.url = await c.navigationUrl(o.url, 'request.continue');
    return r.continue(o);
  },
  respond: (r, [resp], c) => {
    if (!isPlainObject(resp)) throw new MembraneError('request.respond: response must be an object');
    const o = options(
      resp,
      { status: clampNum(100, 599), headers: responseHeaders, contentType: 'string' },
      c.clock,
      'request.respond',
    );
    const body = resp.body;
    if (body !== undefined) {
      // A Uint8Array crosses as a bytes tag.
      if (typeof body === 'string') o.body = body;
      else if (isTagged(body) && body.$ps === 'b' && typeof body.d === 'string') o.body = Buffer.from(body.d, 'base64');
      else throw new MembraneError('request.respond: body must be a string or Uint8Array');
    }
    return r.respond(o);
  },
};

export const REQUEST_SYNC: Table<HTTPRequest> = {
  response: (r) => r.response(),
  frame: (r) => r.frame(),
  redirectChain: (r) => r.redirectChain(),
  isInterceptResolutionHandled: (r) => r.isInterceptResolutionHandled(),
  interceptResolutionState: (r) => r.interceptResolutionState(),
};

export const RESPONSE: Table<HTTPResponse> = Object.fromEntries(
  RESPONSE_BODY.map((m) => [m, (r: HTTPResponse) => (m === 'buffer' ? r.content() : r[m]())]),
);
export const RESPONSE_SYNC: Table<HTTPResponse> = {
  request: (r) => r.request(),
  frame: (r) => r.frame(),
};

export const DIALOG: Table<Dialog> = {
  accept: (d, [text]) => d.accept(text === undefined ? undefined : str(text, 'dialog.accept: promptText')),
  dismiss: (d) => d.dismiss(),
};

export const CONSOLE_SYNC: Table<ConsoleMessage> = {
  args: (m) => m.args(),
};
