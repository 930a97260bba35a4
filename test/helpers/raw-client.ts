// A client on a raw TCP socket, for tests of what the server does with clients
// that send nothing, trickle, stop half-way or stop reading.
import { connect, type Socket } from 'node:net';

export interface RawConnection {
  readonly socket: Socket;
  /** Everything received so far, as latin1 text (bytes as they came). */
  received(): string;
  /** Bytes received so far. */
  receivedBytes(): number;
  /** Resolves when the socket is closed, by either side, however (reset included). */
  readonly closed: Promise<void>;
  /** Resolves once the received text matches. */
  until(pattern: RegExp): Promise<void>;
}

/** Connects to 127.0.0.1:port, from localAddress when given (any of 127.0.0.0/8 is this machine). */
export async function rawConnect(port: number, localAddress?: string): Promise<RawConnection> {
  const socket = connect({ port, host: '127.0.0.1', ...(localAddress === undefined ? {} : { localAddress }) });
  const chunks: Buffer[] = [];
  let bytes = 0;
  const waiters = new Set<() => void>();
  socket.on('data', (b: Buffer) => {
    chunks.push(b);
    bytes += b.length;
    for (const w of [...waiters]) w();
  });
  // A reset by the server is one of the outcomes under test, not a failure of the client.
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const received = (): string => Buffer.concat(chunks).toString('latin1');
  return {
    socket,
    received,
    receivedBytes: () => bytes,
    closed,
    until: (pattern) =>
      new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (pattern.test(received())) {
            waiters.delete(check);
            resolve();
          }
        };
        waiters.add(check);
        socket.once('close', () => {
          if (waiters.delete(check)) reject(new Error(`closed before ${String(pattern)}: ${received().slice(0, 300)}`));
        });
        check();
      }),
  };
}

/** The parts of one HTTP/1.1 response in text received on a raw socket (the first one). */
export function parseResponse(text: string): { status: number; headers: Record<string, string>; body: string } {
  const end = text.indexOf('\r\n\r\n');
  const head = end < 0 ? text : text.slice(0, end);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: end < 0 ? '' : text.slice(end + 4) };
}

/** A complete HTTP/1.1 request as text. */
export function httpRequest(
  method: string,
  target: string,
  headers: Record<string, string> | Array<[string, string]>,
  body = '',
): string {
  const list = Array.isArray(headers) ? headers : Object.entries(headers);
  const all: Array<[string, string]> = [['Host', '127.0.0.1'], ...list];
  if (body !== '' || method === 'POST') all.push(['Content-Length', String(Buffer.byteLength(body))]);
  return `${method} ${target} HTTP/1.1\r\n${all.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${body}`;
}
