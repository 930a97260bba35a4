// Header names that belong to one HTTP/1.1 hop, not to the request (RFC 9110
// §7.6.1, with the proxy ones): the egress guard drops them when it relays a
// request or a response, and request options refuse them (src/protocol/request-options.ts).
// Shared by the front and the slot processes, so it imports nothing.
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
