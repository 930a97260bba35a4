// Reading a request body with a size cap.
import type { IncomingMessage } from 'node:http';
import { ApiError } from '../errors.js';

export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    throw new ApiError('PAYLOAD_TOO_LARGE', `Request body too large (at most ${maxBytes} bytes)`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > maxBytes) throw new ApiError('PAYLOAD_TOO_LARGE', `Request body too large (at most ${maxBytes} bytes)`);
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}
