// A local process, of a chosen user, that asks an egress guard's port for a
// CONNECT tunnel: what any process of this machine could do to a context's port.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** Connects, says "connected", waits for a line on stdin (when asked to), sends the CONNECT, says the first line it got or "closed". */
const CLIENT = `
const net = require('node:net');
const [port, target, wait] = process.argv.slice(1);
const s = net.connect(Number(port), '127.0.0.1');
let got = '';
let said = false;
const say = (t) => { if (!said) { said = true; process.stdout.write(t + '\\n'); s.destroy(); setTimeout(() => process.exit(0), 50); } };
const ask = () => s.write('CONNECT ' + target + ' HTTP/1.1\\r\\nHost: ' + target + '\\r\\n\\r\\n');
s.setEncoding('utf8');
s.on('connect', () => {
  process.stdout.write('connected\\n');
  if (wait === 'wait') process.stdin.once('data', () => (s.destroyed ? say('closed') : ask()));
  else ask();
});
s.on('data', (c) => { got += c; if (got.includes('\\r\\n')) say(got.split('\\r\\n')[0]); });
s.on('error', () => say('closed'));
s.on('close', () => say(got === '' ? 'closed' : got));
`;

export interface LocalClient {
  /** Resolves once the client is connected (or failed to). */
  readonly connected: Promise<void>;
  /** The first line the guard answered, or "closed". */
  readonly answer: Promise<string>;
  /** In "wait" mode: sends the CONNECT now. */
  go(): void;
  readonly child: ChildProcess;
}

export function connectAs(
  user: { uid: number; gid: number } | undefined,
  port: number,
  target: string,
  wait = false,
): LocalClient {
  const child = spawn(process.execPath, ['-e', CLIENT, String(port), target, wait ? 'wait' : 'now'], {
    stdio: ['pipe', 'pipe', 'inherit'],
    ...(user ? { uid: user.uid, gid: user.gid } : {}),
  });
  if (!child.stdout) throw new Error('no stdout');
  const lines = createInterface({ input: child.stdout });
  let connected!: () => void;
  let answered!: (line: string) => void;
  const c = new Promise<void>((r) => (connected = r));
  const answer = new Promise<string>((r) => (answered = r));
  lines.on('line', (line) => {
    if (line === 'connected') connected();
    else {
      connected();
      answered(line);
    }
  });
  child.once('exit', () => {
    connected();
    answered('closed');
  });
  return { connected: c, answer, go: () => child.stdin?.write('go\n'), child };
}
