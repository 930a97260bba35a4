// Real upstream proxies for the tests, on loopback, each with a config of its
// own: Debian's tinyproxy (HTTP CONNECT, BasicAuth) and microsocks (SOCKS5 with
// RFC 1929 user/password). Their packages are installed when missing (root on
// Debian, as on CI), as the Redis tests install redis-server.
//
// Why microsocks and not dante-server: danted checks RFC 1929 user names and
// passwords against the system's accounts (/etc/shadow, or PAM), so testing
// user/password with it needs a system user with a password, or a PAM service
// in /etc/pam.d, on the test machine. microsocks is a real SOCKS5 server in
// Debian that checks a user and password given on its command line and runs
// unprivileged.
//
// Both bind their outgoing connections to 127.0.0.2 (tinyproxy's Bind,
// microsocks -b), so a fixture that records its peer's address shows whether a
// request came through the proxy (127.0.0.2) or straight from the guard (127.0.0.1).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './system.js';

const TINYPROXY = '/usr/bin/tinyproxy';
const MICROSOCKS = '/usr/bin/microsocks';
const START_TIMEOUT_MS = 10_000;
/** Where the proxies' own connections to targets come from. */
export const PROXY_OUTGOING_ADDRESS = '127.0.0.2';

function install(binary: string, pkg: string): void {
  if (existsSync(binary)) return;
  const root = process.getuid?.() === 0;
  if (!root || !existsSync('/etc/debian_version'))
    throw new Error(`${binary} is missing: install it (Debian: apt-get install ${pkg}) to run the proxy tests`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', pkg]]) {
    const r = spawnSync('apt-get', ['-o', 'DPkg::Lock::Timeout=60', ...args], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed: ${r.stderr.slice(-2000)}`);
  }
  if (!existsSync(binary)) throw new Error(`apt-get installed ${pkg} but ${binary} is missing`);
}

async function listening(port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

abstract class ProxyProcess {
  #child: ChildProcess | undefined;
  protected readonly dir = mkdtempSync(join(tmpdir(), 'pagescript-proxy-'));
  port = 0;

  protected abstract command(): [string, string[]];

  async start(): Promise<this> {
    if (this.#child) throw new Error('the proxy is running');
    if (this.port === 0) this.port = await freePort();
    const [cmd, args] = this.command();
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.resume();
    this.#child = child;
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await listening(this.port))) {
      if (child.exitCode !== null) throw new Error(`${cmd} exited with ${child.exitCode}`);
      if (Date.now() > deadline) throw new Error(`${cmd} did not start`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return this;
  }

  /** Stops it; the port stays this proxy's, so start() brings it back where the service expects it. */
  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** tinyproxy with BasicAuth, logging each connection and request line (CONNECT host:port) to a file. */
export class TinyProxy extends ProxyProcess {
  constructor(
    readonly user: string,
    readonly password: string,
  ) {
    super();
    install(TINYPROXY, 'tinyproxy');
  }

  get logFile(): string {
    return join(this.dir, 'tinyproxy.log');
  }

  protected command(): [string, string[]] {
    const conf = join(this.dir, 'tinyproxy.conf');
    const root = process.getuid?.() === 0;
    writeFileSync(
      conf,
      [
        `Port ${this.port}`,
        'Listen 127.0.0.1',
        `Bind ${PROXY_OUTGOING_ADDRESS}`,
        'Timeout 30',
        `BasicAuth ${this.user} ${this.password}`,
        'LogLevel Connect',
        `LogFile "${this.logFile}"`,
        'MaxClients 64',
        'Allow 127.0.0.1',
        'DisableViaHeader Yes',
        // No ConnectPort line: CONNECT to any port (the guard tunnels port 80 too).
        ...(root ? ['User nobody', 'Group nogroup'] : []),
        '',
      ].join('\n'),
    );
    if (root) spawnSync('chown', ['-R', 'nobody:nogroup', this.dir]);
    return [TINYPROXY, ['-d', '-c', conf]];
  }

  /** The request lines tinyproxy logged ("CONNECT 127.0.0.1:4000 HTTP/1.1"), oldest first. */
  requests(): string[] {
    if (!existsSync(this.logFile)) return [];
    return [...readFileSync(this.logFile, 'utf8').matchAll(/Request \(file descriptor \d+\): (.*)$/gm)].map(
      (m) => m[1] as string,
    );
  }
}

/** microsocks: SOCKS5 with a user and password (RFC 1929). */
export class Socks5Proxy extends ProxyProcess {
  constructor(
    readonly user: string,
    readonly password: string,
  ) {
    super();
    install(MICROSOCKS, 'microsocks');
  }

  protected command(): [string, string[]] {
    return [
      MICROSOCKS,
      ['-i', '127.0.0.1', '-p', String(this.port), '-u', this.user, '-P', this.password, '-b', PROXY_OUTGOING_ADDRESS],
    ];
  }
}
