// A channel the front made for a (pretend) slot process, speaking the channel's line
// protocol (src/protocol/egress-channel.ts): what a taken-over slot process could say to the
// egress process.
import type { TestService } from './service.js';

export interface ChannelAnswer {
  ok: boolean;
  s?: number;
  port?: number;
  error?: string;
}

export interface PretendSlot {
  ask(m: object): Promise<ChannelAnswer>;
  /** Asks all of `ms` in one write. */
  askAll(ms: object[]): Promise<ChannelAnswer[]>;
  /** A session (a context's port), optionally bound to a request granted to this slot process. */
  session(bindTo?: string): Promise<{ s: number; port: number }>;
  close(): void;
}

export async function pretendSlot(svc: TestService, index: number): Promise<PretendSlot> {
  const { socket } = await svc.service.egress.channel(index);
  let q = 0;
  let buffer = '';
  const waiting = new Map<number, (a: ChannelAnswer) => void>();
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      const m = JSON.parse(buffer.slice(0, nl)) as ChannelAnswer & { op: string; q: number };
      buffer = buffer.slice(nl + 1);
      if (m.op === 'answer') waiting.get(m.q)?.(m);
    }
  });
  socket.resume();
  const ask = (m: object): Promise<ChannelAnswer> =>
    new Promise((resolve) => {
      q++;
      waiting.set(q, resolve);
      socket.write(`${JSON.stringify({ ...m, q })}\n`);
    });
  const askAll = (ms: object[]): Promise<ChannelAnswer[]> => {
    const answers = ms.map(
      () =>
        new Promise<ChannelAnswer>((resolve) => {
          q++;
          waiting.set(q, resolve);
        }),
    );
    const first = q - ms.length + 1;
    socket.write(ms.map((m, i) => `${JSON.stringify({ ...m, q: first + i })}\n`).join(''));
    return Promise.all(answers);
  };
  return {
    ask,
    askAll,
    session: async (bindTo) => {
      const opened = await ask({ op: 'open' });
      if (!opened.ok || opened.s === undefined || opened.port === undefined) throw new Error(JSON.stringify(opened));
      if (bindTo !== undefined) {
        svc.service.egress.grant(index, bindTo, undefined);
        const bound = await ask({ op: 'bind', s: opened.s, requestId: bindTo });
        if (!bound.ok) throw new Error(JSON.stringify(bound));
      }
      return { s: opened.s, port: opened.port };
    },
    close: () => socket.destroy(),
  };
}
