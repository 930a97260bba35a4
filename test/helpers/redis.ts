// A real redis-server for the tests, on a free loopback port, with nothing
// saved to disk. Debian's redis-server package is installed when it is missing
// (root on Debian, as on CI); elsewhere the tests say what to install.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { freePort } from './system.js';

const BINARY = '/usr/bin/redis-server';
const START_TIMEOUT_MS = 10_000;

function install(): void {
  if (existsSync(BINARY)) return;
  const root = process.getuid?.() === 0;
  if (!root || !existsSync('/etc/debian_version')) {
    throw new Error(
      `${BINARY} is missing: install Redis (Debian: apt-get install redis-server) to run the Redis tests`,
    );
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'redis-server']]) {
    const r = spawnSync('apt-get', args, { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed: ${r.stderr.slice(-2000)}`);
  }
  if (!existsSync(BINARY)) throw new Error(`apt-get installed redis-server but ${BINARY} is missing`);
}

async function reachable(port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.end('PING\r\n');
      sock.once('data', (d) => resolve(d.toString().startsWith('+PONG')));
    });
    sock.once('error', () => resolve(false));
  });
}

export class RedisServer {
  #child: ChildProcess | undefined;

  private constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<RedisServer> {
    install();
    const server = new RedisServer(await freePort());
    await server.restart();
    return server;
  }

  /** Starts it (again) on the same port; an empty Redis, as after a restart without persistence. */
  async restart(): Promise<void> {
    if (this.#child) throw new Error('redis-server is running');
    const child = spawn(
      BINARY,
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
      {
        stdio: 'ignore',
      },
    );
    this.#child = child;
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await reachable(this.port))) {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
      if (Date.now() > deadline) throw new Error('redis-server did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
}
