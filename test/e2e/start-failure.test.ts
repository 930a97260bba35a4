// A start that fails part-way unwinds what it had opened: the HTTP port is
// closed again and no executor (nor its Chromium) is left behind.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { startTestService } from '../helpers/service.js';
import { descendants, freePort } from '../helpers/system.js';
import { readFileSync } from 'node:fs';
import { until } from '../helpers/wait.js';

const executors = (): number[] =>
  descendants(process.pid).filter((p) => {
    try {
      return /executor\.(ts|js)/.test(readFileSync(`/proc/${p}/cmdline`, 'utf8'));
    } catch {
      return false;
    }
  });

test('when the executors cannot start (no Chromium), the start fails and the port and processes it opened are closed', async () => {
  const port = await freePort();
  await assert.rejects(
    startTestService({ PORT: String(port), PUPPETEER_EXECUTABLE_PATH: '/nonexistent/chromium' }),
    /executor exited before it was ready/,
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
  await until(() => executors().length === 0, 'no executor left');
});
