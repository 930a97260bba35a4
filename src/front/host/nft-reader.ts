// Reads the kernel lock's counters once per job without an nft process per read:
// one `nft -j -i` (interactive, JSON) kept for the lock's life answers each query
// on a line of its own: a process per read costs far more CPU (mostly the
// kernel's, loading nft and its cache) than a query to the kept one. Queries go
// one at a time; one that fails or takes too long ends the process, and the next
// query starts another.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { Logger } from '../../common/log.js';

/** How long one query may take before its nft is ended (it answers in milliseconds). */
const QUERY_TIMEOUT_MS = 5_000;
/** The longest answer line kept (one counter's JSON is ~250 bytes). */
const MAX_LINE_BYTES = 64 * 1024;

interface Waiter {
  readonly resolve: (line: string) => void;
  readonly reject: (e: Error) => void;
}

export class NftReader {
  readonly #nft: string;
  readonly #logger: Logger;
  #child: ChildProcessWithoutNullStreams | undefined;
  #waiter: Waiter | undefined;
  #buffer = '';
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(nft: string, logger: Logger) {
    this.#nft = nft;
    this.#logger = logger;
  }

  /** The packets counter `name` of table `inet <table>` has counted (undefined: it could not be read). */
  counterPackets(table: string, name: string): Promise<number | undefined> {
    const next = this.#queue.then(async () => {
      if (this.#closed) return undefined;
      try {
        const line = await this.#ask(`list counter inet ${table} ${name}`);
        const listed = JSON.parse(line) as { nftables?: { counter?: { name?: string; packets?: unknown } }[] };
        const packets = listed.nftables?.find((i) => i.counter?.name === name)?.counter?.packets;
        if (typeof packets !== 'number') throw new Error(`no counter ${name} in nft's answer`);
        return packets;
      } catch (e) {
        this.#logger.warn({ err: String(e), table, counter: name }, 'a kernel lock counter could not be read');
        this.#end();
        return undefined;
      }
    });
    this.#queue = next;
    return next;
  }

  /** Ends the kept nft (again: no-op); later queries answer undefined. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#queue;
    this.#end();
  }

  #ask(command: string): Promise<string> {
    const child = this.#child ?? this.#start();
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`nft took over ${QUERY_TIMEOUT_MS} ms`)), QUERY_TIMEOUT_MS);
      this.#waiter = {
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      child.stdin.write(`${command}\n`);
    }).finally(() => {
      this.#waiter = undefined;
    });
  }

  #start(): ChildProcessWithoutNullStreams {
    const child = spawn(this.#nft, ['-j', '-i'], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.#child = child;
    this.#buffer = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (child !== this.#child) return;
      this.#buffer += chunk;
      const nl = this.#buffer.indexOf('\n');
      if (nl >= 0) {
        const line = this.#buffer.slice(0, nl);
        this.#buffer = this.#buffer.slice(nl + 1);
        this.#waiter?.resolve(line);
      } else if (this.#buffer.length > MAX_LINE_BYTES) this.#waiter?.reject(new Error('nft answered too long a line'));
    });
    // nft says what went wrong on stderr and nothing on stdout: the query fails, and this nft is ended.
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      if (child === this.#child) this.#waiter?.reject(new Error(`nft: ${chunk.trim().slice(0, 300)}`));
    });
    child.stdin.on('error', () => {});
    // Kept for the lock's life, it holds the front's event loop open no more than a timer would.
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr]) (s as { unref?: () => void }).unref?.();
    child.on('error', (e) => {
      if (child === this.#child) this.#waiter?.reject(e);
    });
    child.on('exit', (code, signal) => {
      if (child !== this.#child) return;
      this.#child = undefined;
      this.#waiter?.reject(new Error(`nft exited (${code ?? signal})`));
    });
    return child;
  }

  #end(): void {
    const child = this.#child;
    this.#child = undefined;
    if (!child) return;
    child.stdin.end();
    child.kill('SIGKILL');
  }
}
