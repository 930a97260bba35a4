// Limits that more than one part of a slot applies: the DevTools transport
// (browser/) bounds messages with them, and the membrane names the error a
// script then sees.

/**
 * SECURITY: the largest DevTools message Chromium may send the slot process, in
 * bytes. A constant, not a setting: it only has to be larger than the largest
 * legitimate message under the membrane's own caps, and it bounds what one
 * message costs the slot process (the message, its text and what JSON.parse makes of
 * it: about three times this at the peak, once at a time, since the pipe carries
 * one message after another). The largest legitimate ones are a result or event
 * the membrane can still give the script (MAX_TRANSFER_CHARS, 16 Mi characters:
 * 16 MiB of JSON for ASCII text) and a screenshot whose bytes fit in it (its
 * base64 text is 4/3 of them: 21.4 MiB for 16 MiB). PDFs come as a stream in
 * small reads (IO.read). See docs/budgets.md.
 */
export const MAX_CDP_MESSAGE_BYTES = 24 * 2 ** 20;

/** The text of the protocol error a dropped response is answered with; membrane/wire-errors.ts recognises it. */
export const OVERSIZED_MESSAGE = 'pagescript: the answer is larger than the DevTools message limit';
