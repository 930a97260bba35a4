// The DevTools transport's writes against a real Chromium (no service, no
// Puppeteer): what is sent in one turn is joined into one write at its end
// (small messages) or written at once (large ones), and what matters to
// Chromium is that every message arrives whole, in the order sent, including
// one sent in the same turn as the transport's close (Browser.close at a slot's
// close), and while Chromium is stopped (SIGSTOP) and cannot read.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { afterEach, test } from 'node:test';
import { BoundedPipeTransport, MAX_BATCH_CHARS } from '../../../src/slot/browser/cdp-transport.js';
import { chromiumCommandLine } from '../../../src/slot/browser/chromium-process.js';
import { chooseChromium } from '../../../src/common/config.js';
import { within } from '../../helpers/wait.js';

interface Launched {
  child: ChildProcess;
  transport: BoundedPipeTransport;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const launched: Launched[] = [];
const profiles: string[] = [];

afterEach(() => {
  for (const { child } of launched.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) continue;
    try {
      process.kill(-child.pid, 'SIGCONT');
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  for (const dir of profiles.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function launch(): Launched {
  const problems: string[] = [];
  const { chromium, executablePath } = chooseChromium(process.env, problems);
  assert.deepEqual(problems, []);
  const profile = mkdtempSync(join(tmpdir(), 'pagescript-test-chromium-'));
  profiles.push(profile);
  const args = chromiumCommandLine(
    {
      headless: chromium === 'shell' ? 'shell' : true,
      args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '--disable-gpu'],
      ignoreDefaultArgs: [],
    },
    profile,
  );
  const child = spawn(executablePath, args, { detached: true, stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const transport = new BoundedPipeTransport(child.stdio[3] as Writable, child.stdio[4] as Readable);
  const l = { child, transport, exited };
  launched.push(l);
  return l;
}

/** The ids of the answers, as they come, until `count` have come. */
function answers(t: BoundedPipeTransport, count: number): Promise<number[]> {
  const ids: number[] = [];
  return new Promise((resolve) => {
    t.onmessage = (text) => {
      const m = JSON.parse(text) as { id?: number };
      if (m.id === undefined) return;
      ids.push(m.id);
      if (ids.length === count) resolve(ids);
    };
  });
}

test('Browser.close sent in the same turn as the transport closes reaches Chromium: it exits by itself', async () => {
  const { transport, exited } = launch();
  // Chromium is up: it answers.
  const first = answers(transport, 1);
  transport.send('{"id":1,"method":"Browser.getVersion"}');
  assert.deepEqual(await within(first, 'the first answer'), [1]);
  transport.send('{"id":2,"method":"Browser.close"}');
  transport.close();
  // Not killed: the message went out though the transport closed before the turn ended.
  assert.deepEqual(await within(exited, 'Chromium to exit after Browser.close'), { code: 0, signal: null });
});

test('a Chromium stopped (SIGSTOP) while small and large messages are sent over many turns gets them all, whole and in order, once it runs again', async () => {
  const { child, transport } = launch();
  const first = answers(transport, 1);
  transport.send('{"id":1,"method":"Browser.getVersion"}');
  await within(first, 'the first answer');
  const pid = child.pid as number;
  process.kill(-pid, 'SIGSTOP');
  // More than the pipe's 64 KiB buffer: batches of small ones, and large ones between them.
  const pad = 'p'.repeat(MAX_BATCH_CHARS * 4);
  const n = 2000;
  const got = answers(transport, n);
  let id = 2;
  for (let turn = 0; turn < 20; turn++) {
    for (let i = 0; i < n / 20; i++, id++) {
      transport.send(
        i === 50
          ? `{"id":${id},"method":"Browser.getVersion","params":{"pad":"${pad}"}}`
          : `{"id":${id},"method":"Browser.getVersion"}`,
      );
    }
    await new Promise((r) => setImmediate(r));
  }
  process.kill(-pid, 'SIGCONT');
  const ids = await within(got, 'every answer', 60_000);
  assert.deepEqual(
    ids,
    Array.from({ length: n }, (_, i) => i + 2),
  );
});

test('a message sent as Chromium dies neither throws nor goes unreported: onclose comes', async () => {
  const { child, transport, exited } = launch();
  const first = answers(transport, 1);
  transport.send('{"id":1,"method":"Browser.getVersion"}');
  await within(first, 'the first answer');
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
  });
  process.kill(-(child.pid as number), 'SIGKILL');
  await within(exited, 'Chromium to die');
  // Its pipe is broken (EPIPE on the next write): sends go nowhere, and nothing is thrown.
  for (let i = 0; i < 100; i++) transport.send(`{"id":${i + 2},"method":"Browser.getVersion"}`);
  transport.send(`{"id":200,"method":"Browser.getVersion","params":{"pad":"${'p'.repeat(MAX_BATCH_CHARS)}"}}`);
  await within(closed, 'onclose after Chromium died');
});
