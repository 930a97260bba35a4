// Writing replies: JSON with the right content type, errors as {error, code, statusCode}.
import type { ServerResponse } from 'node:http';
import { ApiError, ERRORS } from '../errors.js';

export const JSON_TYPE = 'application/json; charset=utf-8';
export const HTML_TYPE = 'text/html; charset=utf-8';

export function sendBody(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { ...headers, 'Content-Type': type, 'Content-Length': String(Buffer.byteLength(body)) });
  res.end(body);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  sendBody(res, status, JSON_TYPE, JSON.stringify(value), headers);
}

/** The error body {error, code, statusCode[, logs]} (README "Errors"); never a stack trace. */
export function sendError(res: ServerResponse, e: ApiError, headers: Record<string, string> = {}): void {
  const body: Record<string, unknown> = { error: e.message, code: e.code, statusCode: e.status };
  if (e.logs !== undefined) body.logs = e.logs;
  sendJson(res, e.status, body, { ...headers, ...e.headers });
}

export function internalError(cause: unknown): ApiError {
  return new ApiError('INTERNAL_SERVER_ERROR', ERRORS.INTERNAL_SERVER_ERROR.message, { cause });
}
