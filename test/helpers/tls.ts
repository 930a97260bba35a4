// A throw-away certificate for an https fixture on loopback (openssl), and the
// hash of its key by which a test's Chromium is told to take it as valid
// (BrowserHost's testTrustedSpki, Chromium's --ignore-certificate-errors-spki-list).
import { execFileSync } from 'node:child_process';
import { createHash, createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificate {
  readonly key: Buffer;
  readonly cert: Buffer;
  /** base64 SHA-256 of its public key (SPKI). */
  readonly spki: string;
}

/** A P-256 certificate for `subject` (its CN) and `subjectAltName` (e.g. "DNS:h.test", "IP:127.0.0.1"), valid a day. */
export function testCertificate(subject: string, subjectAltName: string): TestCertificate {
  const dir = mkdtempSync(join(tmpdir(), 'pagescript-tls-'));
  try {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        `/CN=${subject}`,
        '-addext',
        `subjectAltName=${subjectAltName}`,
      ],
      { stdio: 'ignore' },
    );
    const keyPem = readFileSync(key);
    const spki = createHash('sha256')
      .update(createPublicKey(keyPem).export({ type: 'spki', format: 'der' }))
      .digest('base64');
    return { key: keyPem, cert: readFileSync(cert), spki };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
