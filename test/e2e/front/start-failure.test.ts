// A start that fails part-way unwinds what it had opened: the HTTP port is
// closed again and no slot process (nor its Chromium) is left behind.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { startTestService } from '../../helpers/service.js';
import { descendants, freePort } from '../../helpers/system.js';
import { readFileSync } from 'node:fs';
import { until } from '../../helpers/wait.js';
import { request } from 'undici';

const slots = (): number[] =>
  descendants(process.pid).filter((p) => {
    try {
      return /slot\.js|slot\/main\.ts/.test(readFileSync(`/proc/${p}/cmdline`, 'utf8'));
    } catch {
      return false;
    }
  });

test('when the slot processes cannot start (no Chromium), the start fails and the port and processes it opened are closed', async () => {
  const port = await freePort();
  await assert.rejects(
    startTestService({ PORT: String(port), PUPPETEER_EXECUTABLE_PATH: '/nonexistent/chromium' }),
    /slot process exited before it was ready/,
  );
  const refused = await new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
  assert.ok(refused, 'the HTTP port is closed again');
  await until(() => slots().length === 0, 'no slot process left');
});

test(
  'a request that arrives while the service is still starting is answered (503 "starting"), never left hanging',
  {
    timeout: 120_000,
  },
  async () => {
    // The bench polls /health while the service starts: a poll that arrived after
    // the listen but while the egress process started found no app and was never
    // answered, so the bench hung for ever.
    const port = await freePort();
    let started = false;
    const starting = startTestService({ PORT: String(port) }).finally(() => {
      started = true;
    });
    const seen: string[] = [];
    try {
      while (!started) {
        try {
          // A fresh connection each time: each probe is accepted on its own.
          const r = await request(`http://127.0.0.1:${port}/health`, { reset: true });
          const body = (await r.body.json()) as { status?: string };
          seen.push(`${r.statusCode} ${body.status ?? ''}`);
        } catch {
          // not listening yet
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    } finally {
      await (await starting).close();
    }
    assert.ok(
      seen.some((s) => s === '503 starting'),
      `a probe saw the service starting: ${seen.slice(0, 5).join(', ')}`,
    );
  },
);
