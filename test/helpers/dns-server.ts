// A DNS server of the test's own on 127.0.0.1 (UDP): answers A queries for the
// names of its table, never answers names under its silent zone, and says
// NXDOMAIN otherwise (and to AAAA, with no record). No dependency: it reads
// only the queries of Node's own resolver (one question, no name compression)
// and writes one answer record; what it cannot read it drops.
import { createSocket, type Socket } from 'node:dgram';
import { EventEmitter } from 'node:events';

interface Question {
  readonly id: number;
  readonly name: string;
  readonly type: number;
  /** The question section as received (name, type, class), echoed in the answer. */
  readonly raw: Buffer;
}

function readQuestion(msg: Buffer): Question | undefined {
  if (msg.length < 12 || msg.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let at = 12;
  for (;;) {
    const n = msg[at];
    if (n === undefined || n > 63) return undefined;
    at++;
    if (n === 0) break;
    labels.push(msg.subarray(at, at + n).toString('latin1'));
    at += n;
  }
  if (at + 4 > msg.length) return undefined;
  return {
    id: msg.readUInt16BE(0),
    name: labels.join('.').toLowerCase(),
    type: msg.readUInt16BE(at),
    raw: msg.subarray(12, at + 4),
  };
}

export class LoopbackDns extends EventEmitter {
  readonly #socket: Socket = createSocket('udp4');
  /** Queries for the silent zone received (none is ever answered). */
  silentQueries = 0;
  /** Names of the silent zone asked for. */
  readonly silentNames = new Set<string>();
  port = 0;

  constructor(
    readonly table: Readonly<Record<string, string>>,
    readonly silentZone: string,
  ) {
    super();
    this.#socket.on('message', (msg, from) => {
      const q = readQuestion(msg);
      if (!q) return;
      if (q.name === this.silentZone || q.name.endsWith(`.${this.silentZone}`)) {
        this.silentQueries++;
        this.silentNames.add(q.name);
        this.emit('silent', q.name);
        return;
      }
      const address = this.table[q.name];
      const found = address !== undefined && q.type === 1;
      const header = Buffer.alloc(12);
      header.writeUInt16BE(q.id, 0);
      // QR, RD and RA set; RCODE 3 (NXDOMAIN) for a name not in the table.
      header.writeUInt16BE(0x8180 | (address === undefined ? 3 : 0), 2);
      header.writeUInt16BE(1, 4);
      header.writeUInt16BE(found ? 1 : 0, 6);
      const parts = [header, q.raw];
      if (found) {
        // A pointer to the question's name (offset 12), type A, class IN, TTL 0, 4 bytes.
        const answer = Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, ...address.split('.').map(Number)]);
        parts.push(answer);
      }
      this.#socket.send(Buffer.concat(parts), from.port, from.address);
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#socket.bind(0, '127.0.0.1', resolve));
    this.port = this.#socket.address().port;
    return this;
  }

  /** Resolves once `n` queries for the silent zone have arrived. */
  async silentAtLeast(n: number): Promise<void> {
    while (this.silentQueries < n) await new Promise((resolve) => this.once('silent', resolve));
  }

  close(): void {
    this.#socket.close();
  }
}
