// The isolate's Base64: atob and btoa as HTML defines them (checked against
// Node's own), and the byte codec of the wire.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { atob, base64ToBytes, btoa, bytesToBase64 } from '../../../sandbox/base64.js';

const nodeAtob = globalThis.atob;
const nodeBtoa = globalThis.btoa;

function sameOutcome(f: () => string, g: () => string, what: string): void {
  let expected: string | Error;
  try {
    expected = g();
  } catch (e) {
    expected = e as Error;
  }
  if (expected instanceof Error) {
    assert.throws(
      f,
      (e: Error) =>
        e.name === (expected as Error).name ||
        (e.name === 'InvalidCharacterError' && (expected as Error).name === 'InvalidCharacterError'),
      what,
    );
  } else {
    assert.equal(f(), expected, what);
  }
}

test('atob decodes and refuses exactly as Node (HTML forgiving-base64)', () => {
  const inputs = [
    '',
    'YQ',
    'YQ=',
    'YQ==',
    'YQ===',
    'YWI',
    'YWJj',
    ' Y W\nJ j\t',
    'Y',
    'YWJj=',
    '=YWJj',
    'YW=Jj',
    'a-b_',
    'YWJj\u00e9',
    '////',
    '++++',
    'AAAA',
    'AA==',
    'AA=',
    'A',
  ];
  for (const s of inputs)
    sameOutcome(
      () => atob(s),
      () => nodeAtob(s),
      JSON.stringify(s),
    );
  sameOutcome(
    () => atob(undefined),
    () => nodeAtob(undefined as unknown as string),
    'undefined',
  );
  sameOutcome(
    () => atob(null),
    () => nodeAtob(null as unknown as string),
    'null',
  );
});

test('btoa encodes and refuses exactly as Node', () => {
  const inputs = [
    '',
    'a',
    'ab',
    'abc',
    'abcd',
    '\u0000\u00ff\u0080',
    'é',
    '€',
    String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i)),
  ];
  for (const s of inputs)
    sameOutcome(
      () => btoa(s),
      () => nodeBtoa(s),
      JSON.stringify(s).slice(0, 40),
    );
  assert.throws(
    () => btoa('€'),
    (e: Error) => e.name === 'InvalidCharacterError',
  );
});

test('bytes survive the wire codec at every length and value', () => {
  for (let n = 0; n < 70; n++) {
    const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 97 + n * 31) & 0xff);
    const b64 = bytesToBase64(bytes);
    assert.equal(b64, Buffer.from(bytes).toString('base64'));
    assert.deepEqual(base64ToBytes(b64), bytes);
    assert.deepEqual(base64ToBytes(b64.replace(/=+$/, '')), bytes);
  }
  assert.throws(() => base64ToBytes('a$bc'), TypeError);
});
