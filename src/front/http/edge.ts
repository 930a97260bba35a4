// The HTTP server at the edge: how long a client may take to send a request,
// how long an idle connection stays open, how many connections are open at
// once, how long a reply may wait for its reader, and what a client that runs
// out of time or breaks the protocol gets. Hostile clients are the norm here.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Config } from '../../common/config.js';
import { ApiError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { normalizeAddress } from './address.js';
import { errorBody, sendError, setReplyLimits, type ReplyLimits } from './reply.js';
import { ReplyBudget } from './reply-budget.js';

export type EdgeConfig = Pick<
  Config,
  | 'headersTimeoutMs'
  | 'requestTimeoutMs'
  | 'keepAliveTimeoutMs'
  | 'replyStallTimeoutMs'
  | 'replyMemoryBytes'
  | 'maxConnections'
  | 'maxConnectionsPerAddress'
  | 'trustProxy'
>;

export interface EdgeEvents {
  /** A connection was refused because MAX_CONNECTIONS were open. */
  onDropped?(): void;
  /** A connection was refused because MAX_CONNECTIONS_PER_ADDRESS were open from its address. */
  onDroppedPerAddress?(): void;
  /** A request's headers or body did not arrive in time; it got 408. */
  onRequestTimeout?(): void;
  /** A reply was cut off: its reader took nothing for REPLY_STALL_TIMEOUT_MS, or REPLY_MEMORY_BYTES was needed. */
  onReplyCut?(reason: 'stall' | 'memory'): void;
}

/** Sockets whose request ran out of time (and got 408 from here), so the route can log that outcome. */
const timedOut = new WeakSet<Duplex>();

/** The socket's bytesRead when each request arrived (its headers in), so its body's cost on the wire counts from there. */
const readAtArrival = new WeakMap<IncomingMessage, number>();

/** The bytes read off the request's socket since it arrived (headers, body, and what a pipelining client sent after). */
export function bytesReadSinceArrival(req: IncomingMessage): number {
  return req.socket.bytesRead - (readAtArrival.get(req) ?? req.socket.bytesRead);
}

/** True when the request on this socket was ended by HEADERS_TIMEOUT_MS or REQUEST_TIMEOUT_MS. */
export function requestTimedOut(socket: Duplex | null | undefined): boolean {
  return socket != null && timedOut.has(socket);
}

/** How often Node checks the header and request deadlines: often enough that they hold to within a second. */
function checkingIntervalMs(config: EdgeConfig): number {
  return Math.max(50, Math.min(1000, Math.floor(config.headersTimeoutMs / 4)));
}

function rawReply(status: number, reason: string, body: string): string {
  return (
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/**
 * Requests a connection may have sent and not yet been answered (HTTP/1.1
 * pipelining). Clients that pipeline at all (few do) send a handful.
 */
export const MAX_UNANSWERED_REQUESTS = 16;

const TIMEOUT_BODY = JSON.stringify(errorBody(new ApiError('REQUEST_TIMEOUT')));
const MALFORMED_BODY = JSON.stringify(errorBody(new ApiError('MALFORMED_REQUEST')));
const TOO_LARGE_HEADERS_BODY = JSON.stringify(errorBody(new ApiError('HEADERS_TOO_LARGE')));

export function createEdgeServer(
  config: EdgeConfig,
  logger: Logger,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  events: EdgeEvents = {},
): Server {
  /** The reply in progress on each socket, so a late 408 is not written into the middle of one. */
  const replying = new WeakMap<Duplex, ServerResponse>();
  /** Requests on each socket whose reply has not been sent (or dropped) yet. */
  const unanswered = new WeakMap<Duplex, number>();
  const limits: ReplyLimits = {
    stallTimeoutMs: config.replyStallTimeoutMs,
    budget: new ReplyBudget(config.replyMemoryBytes),
    onCut: (res, reason) => {
      events.onReplyCut?.(reason);
      // The request was logged when its reply started; this says the client did not get all of it.
      logger.info(
        { requestId: res.getHeader('x-request-id'), reason, code: 'REPLY_CUT' },
        reason === 'stall'
          ? 'reply cut off: the client took none of it for REPLY_STALL_TIMEOUT_MS'
          : 'reply cut off: REPLY_MEMORY_BYTES were held, and its key held the most',
      );
    },
  };
  const server = createServer(
    {
      keepAlive: true,
      // SECURITY: a client that sends nothing, trickles its headers or stops
      // half-way through its body is cut off: these are Node's own deadlines,
      // checked every connectionsCheckingInterval. Both end when the request
      // is in, so neither cuts a job that is still running, nor its reply.
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: checkingIntervalMs(config),
      // Checked below, so that its 400 is JSON like every other error.
      requireHostHeader: false,
    },
    onRequest,
  );
  function onRequest(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    readAtArrival.set(req, socket.bytesRead);
    const waiting = (unanswered.get(socket) ?? 0) + 1;
    // SECURITY: Node parses every request a client pipelines, whether or not
    // it reads the replies, so a client that never reads holds the front's
    // memory, with no key. Past MAX_UNANSWERED_REQUESTS, the connection is
    // closed and its requests dropped.
    if (waiting > MAX_UNANSWERED_REQUESTS) {
      logger.debug({ code: 'TOO_MANY_PIPELINED' }, 'too many unanswered pipelined requests; connection closed');
      socket.destroy();
      return;
    }
    unanswered.set(socket, waiting);
    res.once('close', () => unanswered.set(socket, (unanswered.get(socket) ?? 1) - 1));
    replying.set(req.socket, res);
    // The next request on a kept-alive connection has no reply in progress yet.
    res.once('finish', () => {
      if (replying.get(req.socket) === res) replying.delete(req.socket);
    });
    setReplyLimits(res, limits);
    // RFC 9112: a server must answer 400 to an HTTP/1.1 request without exactly one Host.
    if (req.httpVersion === '1.1' && req.headersDistinct.host?.length !== 1) {
      sendError(res, new ApiError('MALFORMED_REQUEST', 'Malformed HTTP request: send exactly one Host header'), {
        Connection: 'close',
      });
      return;
    }
    handler(req, res);
  }
  // An Expect other than 100-continue: RFC 9110 lets a server ignore it, and
  // so it is (Node would answer a bare 417).
  server.on('checkExpectation', onRequest);
  // Idle keep-alive connections are closed (Node waits keepAliveTimeoutBuffer, 1 s, more).
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  // SECURITY: past this many open connections, new ones are closed at once ('drop').
  server.maxConnections = config.maxConnections;
  server.on('drop', () => events.onDropped?.());
  // SECURITY: without a cap per address, one client could hold every one of
  // MAX_CONNECTIONS (trickling headers just inside HEADERS_TIMEOUT_MS, and
  // reconnecting) and so refuse every other tenant. Counted as the guessing
  // brake counts (IPv4, IPv6 /64). Behind balancers (TRUST_PROXY) every
  // connection comes from one of them: the balancer must limit its clients.
  if (config.trustProxy === 0) {
    // At most one entry per open connection, so at most MAX_CONNECTIONS entries.
    const openFrom = new Map<string, number>();
    server.on('connection', (socket: Socket) => {
      const address = normalizeAddress(socket.remoteAddress ?? 'unknown');
      const open = openFrom.get(address) ?? 0;
      if (open >= config.maxConnectionsPerAddress) {
        events.onDroppedPerAddress?.();
        socket.destroy();
        return;
      }
      openFrom.set(address, open + 1);
      socket.once('close', () => {
        const left = (openFrom.get(address) ?? 1) - 1;
        if (left > 0) openFrom.set(address, left);
        else openFrom.delete(address);
      });
    });
  }
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const inReply = replying.get(socket)?.headersSent === true;
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      timedOut.add(socket);
      events.onRequestTimeout?.();
      logger.debug({ code: 'REQUEST_TIMEOUT' }, 'request not received in time; connection closed');
      if (socket.writable && !inReply) socket.write(rawReply(408, 'Request Timeout', TIMEOUT_BODY));
      // Closed once the 408 is flushed; nothing more is read from it.
      (socket as Socket).destroySoon();
      return;
    }
    // A malformed request (or a peer that reset): JSON errors as everywhere else, then closed.
    if (socket.writable && !inReply && err.code !== 'ECONNRESET') {
      socket.write(
        err.code === 'HPE_HEADER_OVERFLOW'
          ? rawReply(431, 'Request Header Fields Too Large', TOO_LARGE_HEADERS_BODY)
          : rawReply(400, 'Bad Request', MALFORMED_BODY),
      );
      (socket as Socket).destroySoon();
      return;
    }
    socket.destroy();
  });
  return server;
}
