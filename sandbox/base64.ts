// Base64: for the wire between the isolate and the host (bytes of screenshots,
// PDFs and the like), and the script's atob and btoa (HTML's forgiving-base64).
// Written here rather than taken from core-js: its atob costs milliseconds to
// load in every isolate, and cheerio's entity decoder calls atob on a large
// table as it loads, which core-js's decodes several times slower.

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const VALUES = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) VALUES[ALPHABET.charCodeAt(i)] = i;

export function bytesToBase64(b: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 2 < b.length; i += 3) {
    const n = ((b[i] as number) << 16) | ((b[i + 1] as number) << 8) | (b[i + 2] as number);
    out += `${ALPHABET[n >> 18]}${ALPHABET[(n >> 12) & 63]}${ALPHABET[(n >> 6) & 63]}${ALPHABET[n & 63]}`;
  }
  const rest = b.length - i;
  if (rest === 1) {
    const n = (b[i] as number) << 16;
    out += `${ALPHABET[n >> 18]}${ALPHABET[(n >> 12) & 63]}==`;
  } else if (rest === 2) {
    const n = ((b[i] as number) << 16) | ((b[i + 1] as number) << 8);
    out += `${ALPHABET[n >> 18]}${ALPHABET[(n >> 12) & 63]}${ALPHABET[(n >> 6) & 63]}=`;
  }
  return out;
}

/** Decodes standard Base64 (padding optional); throws on any other character. */
export function base64ToBytes(d: string): Uint8Array {
  const s = d.replace(/=+$/, '');
  if (s.length % 4 === 1) throw new TypeError('invalid Base64');
  const out = new Uint8Array(Math.floor((s.length * 3) / 4));
  let bits = 0;
  let acc = 0;
  let o = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const v = c < 128 ? (VALUES[c] as number) : -1;
    if (v < 0) throw new TypeError('invalid Base64');
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  return out;
}

function invalidCharacter(message: string): Error {
  const e = new Error(message);
  Object.defineProperty(e, 'name', {
    value: 'InvalidCharacterError',
    writable: true,
    configurable: true,
    enumerable: false,
  });
  return e;
}

function bytesToBinary(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return s;
}

/** HTML's atob: forgiving-base64 decode to a binary string. */
export function atob(data: unknown): string {
  if (arguments.length === 0) throw new TypeError("Failed to execute 'atob': 1 argument required, but only 0 present.");
  let s = String(data).replace(/[\t\n\f\r ]/g, '');
  if (s.length % 4 === 0) s = s.replace(/={1,2}$/, '');
  if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s))
    throw invalidCharacter("Failed to execute 'atob': The string to be decoded is not correctly encoded.");
  return bytesToBinary(base64ToBytes(s));
}

/** HTML's btoa: a binary string (every character below 256) to Base64. */
export function btoa(data: unknown): string {
  if (arguments.length === 0) throw new TypeError("Failed to execute 'btoa': 1 argument required, but only 0 present.");
  const s = String(data);
  const bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 255)
      throw invalidCharacter(
        "Failed to execute 'btoa': The string to be encoded contains characters outside of the Latin1 range.",
      );
    bytes[i] = c;
  }
  return bytesToBase64(bytes);
}
