// Reading a request body with a size cap.
import type { IncomingMessage } from 'node:http';
import { ApiError } from '../../common/errors.js';
import { bytesReadSinceArrival } from './edge.js';

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
 * A body's pieces beyond this many must average at least BODY_MIN_AVERAGE_PIECE_BYTES.
 * A piece is what the parser hands over at once: one chunk of a chunked body, or
 * what one read of the socket brought. Real clients send pieces of a TCP segment
 * (>= 536 bytes) or more; a 1 MiB body is a few hundred of them.
 */
export const BODY_FREE_PIECES = 1024;
export const BODY_MIN_AVERAGE_PIECE_BYTES = 256;
/** Wire bytes a body may take beyond twice its limit (headers read ahead, framing of small bodies). */
const BODY_WIRE_SLACK_BYTES = 64 * 1024;

const wasteful = (): ApiError =>
  new ApiError(
    'PAYLOAD_TOO_LARGE',
    'Request body sent in too many pieces or with too much framing (tiny chunks, chunk extensions): ' +
      'send it with Content-Length, or in chunks of 1 KiB or more',
  );

/**
 * The whole body, at most maxBytes. Past the cap it stops reading (the 413 then
 * closes the connection) rather than destroying the request, so the client
 * still gets its 413. Rejects when the client goes away mid-body.
 *
 * SECURITY: the cap on bytes is not enough on its own. A chunked body costs the
 * front an event and a buffer per chunk, and up to 16 KiB of chunk extensions
 * each that never count as body: tiny chunks cost the front far more memory and
 * time than their bytes, and extensions have it read far more than the body
 * (docs/performance.md, "Why the constants are what they are"). So the pieces
 * are counted (past BODY_FREE_PIECES they must average
 * BODY_MIN_AVERAGE_PIECE_BYTES) and so are the bytes read off the socket (at
 * most 2 × maxBytes + 64 KiB since the request arrived, so that what was read
 * while it was authenticated counts too), and each piece is copied into one
 * buffer rather than kept.
 */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  const maxWireBytes = 2 * maxBytes + BODY_WIRE_SLACK_BYTES;
  return await new Promise<Buffer>((resolve, reject) => {
    let buffer = Buffer.allocUnsafe(
      Number.isFinite(declared) && declared > 0 ? declared : Math.min(16 * 1024, maxBytes),
    );
    let size = 0;
    let pieces = 0;
    // 'error' and 'close' stay listened to (a settled promise ignores them), so a late abort is not unhandled.
    const stop = (e: ApiError): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.pause();
      reject(e);
    };
    const onData = (b: Buffer): void => {
      size += b.length;
      pieces++;
      if (size > maxBytes) return stop(tooLarge(maxBytes));
      if (
        (pieces > BODY_FREE_PIECES && pieces > BODY_FREE_PIECES + size / BODY_MIN_AVERAGE_PIECE_BYTES) ||
        bytesReadSinceArrival(req) > maxWireBytes
      )
        return stop(wasteful());
      if (size > buffer.length) {
        const grown = Buffer.allocUnsafe(Math.min(maxBytes, Math.max(size, 2 * buffer.length)));
        buffer.copy(grown, 0, 0, size - b.length);
        buffer = grown;
      }
      b.copy(buffer, size - b.length);
    };
    const onEnd = (): void => {
      req.off('data', onData);
      resolve(buffer.subarray(0, size));
    };
    const onGone = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      reject(new ApiError('SERVICE_UNAVAILABLE', 'Client went away'));
    };
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onGone);
    req.once('close', onGone);
  });
}
