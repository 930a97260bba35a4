// Least privilege, read from the real processes: the service (src/front/server.ts) is
// started with every secret it can hold (API_KEYS, a key file, REDIS_URL,
// METRICS_TOKEN); its slot processes and every Chromium process have none of
// them in their environment, hold none of the front's sockets or files, run as
// their slot's unprivileged user when the service is root (a user per slot, who
// cannot read the key file, nor ptrace, signal or read another slot's
// processes), and Chromium's renderers run under its seccomp sandbox.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { hashKey, writeKeyFile } from '../../../src/front/tenancy/keyfile.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { RedisServer } from '../../helpers/redis.js';
import { TEST_KEY } from '../../helpers/service.js';
import { alive, descendants } from '../../helpers/system.js';
import { until } from '../../helpers/wait.js';
import { lookupUser } from '../../../src/front/host/users.js';

const FILE_KEY = 'file-key-0123456789abcdef';
const TOKEN = 'metrics-token-secret-0123456789';
const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const dir = mkdtempSync(join(tmpdir(), 'pagescript-privilege-'));
const keyFile = join(dir, 'keys.json');
let redis: RedisServer;
let child: ChildProcess;
let base = '';

before(async () => {
  await fixtures.start();
  redis = await RedisServer.start();
  writeKeyFile(keyFile, { version: 1, keys: [{ name: 'file-tenant', sha256: hashKey(FILE_KEY), active: true }] });
  child = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', 'src/front/server.ts'], {
    env: {
      ...process.env,
      PORT: '0',
      API_KEYS: TEST_KEY,
      API_KEYS_FILE: keyFile,
      REDIS_URL: redis.url,
      METRICS_TOKEN: TOKEN,
      LOG_LEVEL: 'silent',
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      // Two slots, both kept up for the whole file.
      MAX_CONCURRENCY: '2',
      IDLE_SLOT_CLOSE_MS: '0',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  base = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    child.once('exit', () => reject(new Error(`the service exited before listening: ${out}`)));
  });
});
after(async () => {
  const exited = new Promise((r) => child.once('exit', r));
  if (child.exitCode === null) child.kill('SIGTERM');
  await exited;
  await redis.stop();
  await fixtures.close();
  rmSync(dir, { recursive: true, force: true });
});

const cmdline = (pid: number): string => readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
const environ = (pid: number): string => readFileSync(`/proc/${pid}/environ`, 'utf8');
function statusField(pid: number, field: string): string {
  const m = new RegExp(`^${field}:[ \\t]*(.*)$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m?.[1] ?? '';
}
/** What each descriptor of a process points at: "socket:[123]", "pipe:[4]", a path. */
function fds(pid: number): string[] {
  const out: string[] = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      out.push(readlinkSync(`/proc/${pid}/fd/${fd}`));
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

/** The slot processes (children of the front running dist/slot.js or src/slot/main.ts) and, under each, Chromium's processes; the egress process. */
function processes(): { slots: number[]; chromium: number[]; egress: number[] } {
  const front = child.pid ?? 0;
  // A process listed may be gone by the time it is read (a renderer of the last request exiting).
  const lines = new Map<number, string>();
  for (const p of descendants(front)) {
    try {
      lines.set(p, cmdline(p));
    } catch {
      // gone meanwhile
    }
  }
  const all = [...lines.keys()];
  const slots = all.filter((p) => /slot\.js|slot\/main\.ts/.test(lines.get(p) ?? ''));
  const chromium = all.filter((p) => /chrom/.test(lines.get(p) ?? ''));
  const egress = all.filter((p) => /egress-process\.js|egress\/main\.ts/.test(lines.get(p) ?? ''));
  return { slots, chromium, egress };
}

/** PTRACE_ATTACH on `pid` as `user` (Python's ctypes: no native code of ours); the errno's text, or "attached". */
function ptraceAs(user: { uid: number; gid: number }, pid: number): string {
  const r = spawnSync(
    '/usr/bin/python3',
    [
      '-c',
      'import ctypes,os,sys; l=ctypes.CDLL(None,use_errno=True); r=l.ptrace(16,int(sys.argv[1]),0,0); print("attached" if r==0 else os.strerror(ctypes.get_errno()))',
      String(pid),
    ],
    { uid: user.uid, gid: user.gid, encoding: 'utf8' },
  );
  return r.stdout.trim();
}

const secrets = (): string[] => [
  'API_KEYS',
  'API_KEYS_FILE',
  'REDIS_URL',
  'METRICS_TOKEN',
  TEST_KEY,
  TOKEN,
  keyFile,
  redis.url,
];

async function scrape(script: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await request(`${base}/api/scrape`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-key': TEST_KEY },
    body: JSON.stringify({ url: fixtures.url('/example'), script }),
  });
  return { status: r.statusCode, body: (await r.body.json()) as Record<string, unknown> };
}

describe('the slot processes and Chromium', () => {
  test('run apart from the front: at least one slot process, with Chromium under it', () => {
    const { slots, chromium } = processes();
    assert.ok(slots.length >= 1, 'a slot process');
    assert.ok(chromium.length >= 2, 'Chromium processes');
    for (const p of chromium)
      assert.ok(
        slots.some((e) => descendants(e).includes(p)),
        `Chromium ${p} runs under a slot process, not the front`,
      );
  });

  test('have no API key, key-file path, Redis URL or metrics token in their environment', () => {
    const front = environ(child.pid ?? 0);
    assert.ok(front.includes(TEST_KEY) && front.includes(TOKEN), 'control: the front has them');
    const { slots, chromium } = processes();
    for (const p of [...slots, ...chromium]) {
      const env = environ(p);
      for (const secret of secrets()) assert.ok(!env.includes(secret), `${secret} is in /proc/${p}/environ`);
      assert.ok(!cmdline(p).includes(TEST_KEY) && !cmdline(p).includes(TOKEN), `a secret in /proc/${p}/cmdline`);
    }
  });

  test('hold none of the front’s sockets or files (its listening socket, the key file, Redis)', () => {
    const frontSockets = new Set(fds(child.pid ?? 0).filter((l) => l.startsWith('socket:')));
    assert.ok(frontSockets.size >= 2, 'control: the front has sockets (HTTP server, Redis)');
    const { slots, chromium } = processes();
    for (const p of [...slots, ...chromium]) {
      for (const link of fds(p)) {
        assert.ok(!frontSockets.has(link), `/proc/${p}/fd has the front's ${link}`);
        assert.notEqual(link, keyFile, `/proc/${p}/fd has the key file`);
      }
    }
  });

  test('as root, each slot runs as its own unprivileged slot user (its Chromium too), who cannot read the key file', (t) => {
    if (process.getuid?.() !== 0) {
      t.skip('the service is not root here: slots keep its user, without the secrets');
      return;
    }
    const users = [lookupUser('pagescript-slot-0'), lookupUser('pagescript-slot-1')];
    assert.ok(users[0] && users[1], 'the slot users exist (scripts/bootstrap.mjs creates them)');
    assert.match(statusField(child.pid ?? 0, 'Uid'), /^0\s/, 'control: the front is root');
    const { slots } = processes();
    assert.equal(slots.length, 2, 'a process per slot');
    const seen = new Set<number>();
    for (const e of slots) {
      const uid = Number(statusField(e, 'Uid').split(/\s+/)[0]);
      const user = users.find((u) => u?.uid === uid);
      assert.ok(user, `slot process ${e} runs as a slot user (uid ${uid})`);
      seen.add(uid);
      for (const p of [e, ...descendants(e)]) {
        let uids: number[];
        try {
          uids = statusField(p, 'Uid').split(/\s+/).map(Number);
        } catch {
          continue; // a renderer gone meanwhile
        }
        assert.deepEqual(uids, [user.uid, user.uid, user.uid, user.uid], `process ${p} under slot process ${e}`);
        assert.deepEqual(statusField(p, 'Gid').split(/\s+/).map(Number), [user.gid, user.gid, user.gid, user.gid]);
        assert.equal(statusField(p, 'Groups'), '', `process ${p} has no supplementary groups`);
      }
    }
    assert.equal(seen.size, 2, 'the two slots run as two users');
    const user = users[0];
    const read = spawnSync(process.execPath, ['-e', `require('fs').readFileSync(${JSON.stringify(keyFile)})`], {
      uid: user.uid,
      gid: user.gid,
      encoding: 'utf8',
    });
    assert.notEqual(read.status, 0, 'a slot user read the key file');
    assert.match(read.stderr, /EACCES/);
  });

  test("as root, one slot's user cannot ptrace, signal or read the memory or environment of another slot's processes", async (t) => {
    if (process.getuid?.() !== 0) {
      t.skip('the service is not root here: every slot has its user (docs/architecture.md: what holds instead)');
      return;
    }
    const { slots } = processes();
    const uidOf = (p: number): number => Number(statusField(p, 'Uid').split(/\s+/)[0]);
    const [mine, theirs] = [...slots].sort((a, b) => uidOf(a) - uidOf(b));
    assert.ok(mine !== undefined && theirs !== undefined, 'two slot processes');
    const me = { uid: uidOf(mine), gid: Number(statusField(mine, 'Gid').split(/\s+/)[0]) };
    const targets = [theirs, ...descendants(theirs).filter((p) => /chrom/.test(cmdline(p)))];
    assert.ok(targets.length >= 2, "the other slot's process and its Chromium");
    /** What `me` gets trying each way into `pid`: an errno's code per attempt, or "ok". */
    const attempts = (pid: number): Record<string, string> => {
      const r = spawnSync(
        process.execPath,
        [
          '-e',
          `const fs = require('fs'); const pid = Number(process.argv[1]); const out = {};
           const tryIt = (name, fn) => { try { fn(); out[name] = 'ok'; } catch (e) { out[name] = e.code; } };
           // Reads first: once SIGKILL lands, a dead process's memory can be read by no one.
           tryIt('mem', () => fs.closeSync(fs.openSync('/proc/' + pid + '/mem', 'r')));
           tryIt('environ', () => fs.readFileSync('/proc/' + pid + '/environ'));
           tryIt('kill0', () => process.kill(pid, 0));
           tryIt('SIGSTOP', () => process.kill(pid, 'SIGSTOP'));
           tryIt('SIGKILL', () => process.kill(pid, 'SIGKILL'));
           console.log(JSON.stringify(out));`,
          String(pid),
        ],
        { uid: me.uid, gid: me.gid, encoding: 'utf8' },
      );
      return JSON.parse(r.stdout) as Record<string, string>;
    };
    // Control: the same attempts reach processes of its own user (so each can fail): one for
    // ptrace, another for the rest (the last of which kills it).
    for (const check of ['ptrace', 'others'] as const) {
      const own = spawn('/bin/sleep', ['30'], { uid: me.uid, gid: me.gid });
      try {
        // Once it is sleep, as that user (before its exec it is still the front's fork).
        await until(() => cmdline(own.pid ?? 0).startsWith('/bin/sleep'), 'the control process to run');
        if (check === 'ptrace')
          assert.equal(ptraceAs(me, own.pid ?? 0), 'attached', 'control: ptrace works on its own processes');
        else
          assert.deepEqual(
            attempts(own.pid ?? 0),
            { kill0: 'ok', SIGSTOP: 'ok', SIGKILL: 'ok', mem: 'ok', environ: 'ok' },
            'control: every attempt reaches a process of its own user',
          );
      } finally {
        own.kill('SIGKILL');
      }
    }
    for (const pid of targets) {
      assert.deepEqual(
        attempts(pid),
        { kill0: 'EPERM', SIGSTOP: 'EPERM', SIGKILL: 'EPERM', mem: 'EACCES', environ: 'EACCES' },
        `slot user ${me.uid} against process ${pid} of another slot`,
      );
      assert.equal(ptraceAs(me, pid), 'Operation not permitted', `slot user ${me.uid} attached to process ${pid}`);
    }
    assert.ok(alive(theirs), 'the other slot process is still there');
  });

  test('Chromium runs with its own sandbox: no --no-sandbox, /health says so', async () => {
    for (const p of processes().chromium) assert.ok(!cmdline(p).includes('--no-sandbox'), cmdline(p));
    const health = (await (await request(`${base}/health`)).body.json()) as Record<string, unknown>;
    assert.equal(health.chromiumSandbox, true);
  });

  test("the headless shell's GPU and network service run in its browser process (they were unsandboxed processes of its own)", async (t) => {
    const health = (await (await request(`${base}/health`)).body.json()) as Record<string, unknown>;
    if (health.chromium !== 'shell') return t.skip('the full browser keeps them apart');
    const types = processes().chromium.map((p) => /--type=([\w-]+)/.exec(cmdline(p))?.[1] ?? 'browser');
    assert.ok(types.includes('browser') && types.includes('renderer'), types.join(' '));
    assert.ok(!types.includes('gpu-process'), types.join(' '));
    assert.ok(
      !processes().chromium.some((p) => cmdline(p).includes('network.mojom.NetworkService')),
      'a network service process',
    );
  });

  test('every renderer of a real request runs under seccomp with no new privileges', async () => {
    const running = scrape('await new Promise((r) => setTimeout(r, 2500)); return await page.title()');
    let renderers: number[] = [];
    await until(async () => {
      // The busy counts need the metrics token.
      const auth = { headers: { authorization: `Bearer ${TOKEN}` } };
      const health = (await (await request(`${base}/health`, auth)).body.json()) as Record<string, unknown>;
      renderers = processes().chromium.filter((p) => cmdline(p).includes('--type=renderer'));
      return health.running === 1 && renderers.length > 0;
    }, 'the script to run in a page');
    for (const p of renderers) {
      assert.equal(statusField(p, 'Seccomp'), '2', `renderer ${p} runs under seccomp-bpf`);
      assert.equal(statusField(p, 'NoNewPrivs'), '1', `renderer ${p} has no_new_privs`);
    }
    const r = await running;
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data, 'Example Domain');
  });
});

describe('the egress process', () => {
  test('runs apart from the front and the slot processes, with no Chromium under it', () => {
    const { egress, slots } = processes();
    assert.equal(egress.length, 1, 'one egress process');
    const pid = egress[0] ?? 0;
    assert.ok(!slots.includes(pid));
    assert.deepEqual(
      descendants(pid).filter((p) => {
        try {
          return /chrom|slot/.test(cmdline(p));
        } catch {
          return false; // gone meanwhile
        }
      }),
      [],
      'no Chromium and no slot process under it',
    );
  });

  test('has no API key, key-file path, Redis URL or metrics token in its environment, only the allow-list', () => {
    for (const p of processes().egress) {
      const env = environ(p);
      for (const secret of secrets()) assert.ok(!env.includes(secret), `${secret} is in /proc/${p}/environ`);
      const names = env
        .split('\0')
        .filter(Boolean)
        .map((v) => v.split('=')[0]);
      for (const name of names)
        assert.ok(
          /^(PATH|LANG|LC_ALL|LC_CTYPE|TZ|MALLOC_ARENA_MAX|NODE_ENV|HOME|TMPDIR|XDG_CONFIG_HOME|XDG_CACHE_HOME|NODE_CHANNEL_FD|NODE_CHANNEL_SERIALIZATION_MODE)$/.test(
            name ?? '',
          ) ||
            // Node adds it to every child when the tests measure coverage (npm test): a directory, no secret.
            (name === 'NODE_V8_COVERAGE' && process.env.NODE_V8_COVERAGE !== undefined),
          `${name} is in its environment`,
        );
    }
  });

  test('holds none of the front’s sockets or files', () => {
    const frontSockets = new Set(fds(child.pid ?? 0).filter((l) => l.startsWith('socket:')));
    for (const p of processes().egress)
      for (const link of fds(p)) {
        assert.ok(!frontSockets.has(link), `/proc/${p}/fd has the front's ${link}`);
        assert.notEqual(link, keyFile, `/proc/${p}/fd has the key file`);
      }
  });

  test('as root, runs as its own user, not a slot’s: a slot user cannot ptrace it', (t) => {
    if (process.getuid?.() !== 0) {
      t.skip('the service is not root here: the egress process keeps its user, without the secrets');
      return;
    }
    const egressUser = lookupUser(process.env.EGRESS_USER ?? 'pagescript-egress');
    const execUser = lookupUser('pagescript-slot-0');
    assert.ok(egressUser && execUser, 'both users exist (scripts/bootstrap.mjs creates them)');
    assert.notEqual(egressUser.uid, 0);
    assert.notEqual(egressUser.uid, execUser.uid);
    const pid = processes().egress[0] ?? 0;
    assert.deepEqual(statusField(pid, 'Uid').split(/\s+/).map(Number), Array(4).fill(egressUser.uid));
    assert.deepEqual(statusField(pid, 'Gid').split(/\s+/).map(Number), Array(4).fill(egressUser.gid));
    assert.equal(statusField(pid, 'Groups'), '');
    // Control: the same call attaches to a process of the slot process user's own.
    const own = spawn('/bin/sleep', ['30'], { uid: execUser.uid, gid: execUser.gid });
    try {
      assert.equal(ptraceAs(execUser, own.pid ?? 0), 'attached', 'control: ptrace works on its own processes');
    } finally {
      own.kill('SIGKILL');
    }
    assert.equal(
      ptraceAs(execUser, pid),
      'Operation not permitted',
      'the slot process user attached to the egress process',
    );
  });
});
