// Reading a request body with a size cap.
import type { IncomingMessage } from 'node:http';
import { ApiError } from '../errors.js';

const tooLarge = (maxBytes: number): ApiError =>
  new ApiError('PAYLOAD_TOO_LARGE', `Request body too large (at most ${maxBytes} bytes)`);

/** Throws 415 naming a Content-Encoding other than identity: the body would be read as JSON as it is. */
export function checkContentEncoding(req: IncomingMessage): void {
  const encoding = (req.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return;
  throw new ApiError(
    'UNSUPPORTED_MEDIA_TYPE',
    `Content-Encoding ${JSON.stringify(encoding.slice(0, 64))} is not supported: send the body uncompressed`,
  );
}

/**
 * The whole body, at most maxBytes. Past the cap it stops reading (the 413 then
 * closes the connection) rather than destroying the request, so the client
 * still gets its 413. Rejects when the client goes away mid-body.
 */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  return await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // 'error' and 'close' stay listened to (a settled promise ignores them), so a late abort is not unhandled.
    const stop = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
    };
    const onData = (b: Buffer): void => {
      size += b.length;
      if (size > maxBytes) {
        stop();
        req.pause();
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(b);
    };
    const onEnd = (): void => {
      stop();
      resolve(Buffer.concat(chunks));
    };
    const onGone = (): void => {
      stop();
      reject(new ApiError('SERVICE_UNAVAILABLE', 'Client went away'));
    };
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onGone);
    req.once('close', onGone);
  });
}
