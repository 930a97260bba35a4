// Writing replies: JSON with the right content type, errors as {error, code, statusCode},
// and the two rules every reply follows at the edge: a reply sent before the
// request's body was read closes the connection, and a reply whose reader stalls
// is cut off.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ApiError, ERRORS } from '../../common/errors.js';
import type { ReplyBudget } from './reply-budget.js';

export const JSON_TYPE = 'application/json; charset=utf-8';
export const HTML_TYPE = 'text/html; charset=utf-8';

export interface ReplyLimits {
  /** A reply whose reader takes nothing for this long is cut off (REPLY_STALL_TIMEOUT_MS). */
  readonly stallTimeoutMs: number;
  /** The bytes of replies held at once (REPLY_MEMORY_BYTES); replies with an owner count towards it. */
  readonly budget?: ReplyBudget;
  /** A reply was cut off: its reader stalled, or its memory was needed (see ReplyBudget). */
  onCut?(res: ServerResponse, reason: 'stall' | 'memory'): void;
}

/** For responses made by a server without an edge (tests that build the app alone). */
const DEFAULT_LIMITS: ReplyLimits = { stallTimeoutMs: 30_000 };
const limitsOf = new WeakMap<ServerResponse, ReplyLimits>();
const ownerOf = new WeakMap<ServerResponse, string>();

/** Set by the edge server on every response before the app sees it. */
export function setReplyLimits(res: ServerResponse, limits: ReplyLimits): void {
  limitsOf.set(res, limits);
}

/** The key a reply is for (its name): its reply then counts towards that key's share of REPLY_MEMORY_BYTES. */
export function setReplyOwner(res: ServerResponse, owner: string): void {
  ownerOf.set(res, owner);
}

/** Written in slices, so that each slice the reader takes is progress the deadline sees. */
const SLICE_BYTES = 64 * 1024;

/**
 * Writes body with backpressure; a reader that takes no slice for
 * stallTimeoutMs gets its connection destroyed, which frees the reply.
 * SECURITY: a socket timeout cannot do this: one write of a large body
 * reports no progress until all of it is taken, so it would cut slow readers
 * that are reading, and it would have to be armed during the job too.
 */
function writeBody(res: ServerResponse, body: Buffer, limits: ReplyLimits): void {
  const deadline = setTimeout(() => {
    limits.onCut?.(res, 'stall');
    res.destroy();
  }, limits.stallTimeoutMs);
  deadline.unref();
  let release = (): void => undefined;
  const owner = ownerOf.get(res);
  if (owner !== undefined && limits.budget !== undefined) {
    release = limits.budget.hold(owner, body.length, () => {
      limits.onCut?.(res, 'memory');
      res.destroy();
    });
  }
  const done = (): void => {
    clearTimeout(deadline);
    // The body is the kernel's (or dropped) now: it no longer counts.
    release();
  };
  res.once('close', done);
  res.once('finish', done);
  const progress = (): void => {
    deadline.refresh();
  };
  let offset = 0;
  const next = (): void => {
    while (!res.destroyed) {
      const slice = body.subarray(offset, offset + SLICE_BYTES);
      offset += slice.length;
      if (offset >= body.length) {
        res.end(slice, done);
        return;
      }
      if (!res.write(slice, progress)) {
        res.once('drain', next);
        return;
      }
    }
  };
  next();
}

/** Whether part of the request's body has not arrived yet (a request without a body has none to wait for). */
/** After an early reply, how long the connection stays open (its write side closed) for the client to read it. */
export const LINGER_MS = 1_000;

/**
 * Closes the connection of an early reply in two steps, as nginx's lingering
 * close does: the reply and a FIN first, then the socket itself LINGER_MS
 * later. Closing at once with the client's unread body in the kernel's buffer
 * sends a reset, and a client still writing its body then loses the reply it
 * had not read yet (it sees ECONNRESET, never the 413).
 */
function lingerAfterReply(res: ServerResponse): void {
  const socket = res.socket as Socket | null;
  if (socket === null) return;
  // Node ends the connection of a `Connection: close` reply with destroySoon() once it is flushed.
  socket.destroySoon = function lingeringClose(this: Socket): void {
    if (this.writable) this.end();
    // SECURITY: nothing more is read from the client while it lingers (Node's parser would read and
    // drop the rest of the body as fast as it comes). Node's HTTP parser reads the socket's handle
    // directly, so pause() would not stop it; readStop() on the handle does. Without it, close at once.
    const handle = (this as unknown as { _handle?: { readStop?: () => number } })._handle;
    if (typeof handle?.readStop !== 'function' || handle.readStop() !== 0) {
      this.destroy();
      return;
    }
    setTimeout(() => this.destroy(), LINGER_MS).unref();
  };
}

function bodyPending(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

export function sendBody(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  const bytes = Buffer.from(body, 'utf8');
  const all: Record<string, string> = { ...headers, 'Content-Type': type, 'Content-Length': String(bytes.length) };
  // SECURITY: answered before the request's body came in (401, 413, 415, 429…):
  // Node would go on reading and discarding the rest of it for as long as the
  // client sends. With Connection: close it ends the socket once this reply is
  // flushed instead, so a client is never read from beyond what came before.
  if (bodyPending(res.req)) {
    all.Connection = 'close';
    lingerAfterReply(res);
  }
  res.writeHead(status, all);
  writeBody(res, bytes, limitsOf.get(res) ?? DEFAULT_LIMITS);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  sendBody(res, status, JSON_TYPE, JSON.stringify(value), headers);
}

/**
 * The error body {error, code, statusCode[, logs]} (docs/api.md "Errors"), and for a
 * failed script or navigation where and why (docs/api.md "When a script fails"):
 * never a host stack trace.
 */
export function errorBody(e: ApiError): Record<string, unknown> {
  const body: Record<string, unknown> = { error: e.message, code: e.code, statusCode: e.status };
  if (e.logs !== undefined) body.logs = e.logs;
  if (e.failure !== undefined) {
    for (const [k, v] of Object.entries(e.failure)) if (v !== undefined && !(k in body)) body[k] = v;
  }
  return body;
}

export function sendError(res: ServerResponse, e: ApiError, headers: Record<string, string> = {}): void {
  sendJson(res, e.status, errorBody(e), { ...headers, ...e.headers });
}

export function internalError(cause: unknown): ApiError {
  return new ApiError('INTERNAL_SERVER_ERROR', ERRORS.INTERNAL_SERVER_ERROR.message, { cause });
}
