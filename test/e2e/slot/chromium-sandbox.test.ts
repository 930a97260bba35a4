// Where Chromium cannot start with its own sandbox (a kernel or container
// without user namespaces), the service still starts: it logs a warning once,
// /health says "chromiumSandbox": false, and requests are served. Chromium's
// refusal is imitated by a wrapper that, like Chromium there, exits with "No
// usable sandbox!" unless it is given --no-sandbox.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { capturingLogger, startTestService, type TestService } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';

const CHROMIUM = process.env.PUPPETEER_EXECUTABLE_PATH ?? '/usr/lib/chromium/chromium';
const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const dir = mkdtempSync(join(tmpdir(), 'pagescript-nosandbox-'));
const wrapper = join(dir, 'chromium-without-userns');
const log = capturingLogger();
let started: TestService | undefined;
const svc = (): TestService => {
  if (!started) throw new Error('the service did not start');
  return started;
};

before(async () => {
  await fixtures.start();
  // Readable and runnable by the slot process user.
  chmodSync(dir, 0o755);
  writeFileSync(
    wrapper,
    `#!/bin/sh
for a in "$@"; do [ "$a" = "--no-sandbox" ] && exec ${CHROMIUM} "$@"; done
echo "[0101/000000.000000:FATAL:zygote_host_impl_linux.cc(127)] No usable sandbox! Update your kernel or see the sandbox docs." >&2
exit 1
`,
    { mode: 0o755 },
  );
  started = await startTestService(
    { EGRESS_ALLOWLIST: fixtures.allowEntry, PUPPETEER_EXECUTABLE_PATH: wrapper },
    {},
    log.logger,
  );
});
after(async () => {
  await started?.close();
  await fixtures.close();
  rmSync(dir, { recursive: true, force: true });
});

const warnings = (): Array<Record<string, unknown>> =>
  log.lines.filter((l) => l.level === 40 && /without its own sandbox/.test(String(l.msg)));
/** The slot processes that warned (each slot process launches its own Chromium and warns for it). */
const warnedBy = (): unknown[] => warnings().map((l) => l.slotPid);

test('without a usable sandbox Chromium starts anyway, /health says chromiumSandbox: false, requests are served', async () => {
  const health = await svc().raw('GET', '/health');
  assert.equal(health.status, 200);
  assert.equal(health.body.chromiumSandbox, false);
  const r = await svc().post({ url: fixtures.url('/example'), script: 'return await page.title()' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, 'Example Domain');
});

test('the warning is logged once per slot process, also when its Chromium is relaunched', async () => {
  assert.equal(new Set(warnedBy()).size, warnedBy().length, 'no slot process warned twice');
  const before = warnings().length;
  assert.ok(before >= 1);
  const pid = svc().service.browser.pid;
  assert.ok(pid);
  const restarts = svc().service.browser.restarts;
  process.kill(pid, 'SIGKILL');
  await until(() => svc().service.browser.restarts === restarts + 1 && svc().service.browser.ready, 'the relaunch');
  const r = await svc().post({ url: fixtures.url('/example'), script: 'return await page.title()' });
  assert.equal(r.status, 200, r.text);
  const pidWarned = warnedBy().filter((p) => p === warnedBy()[0]).length;
  assert.equal(pidWarned, 1, 'the relaunch did not warn again');
  assert.equal(new Set(warnedBy()).size, warnedBy().length, 'no slot process warned twice');
});
