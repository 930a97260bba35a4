// The table of one Chromium's figures, in Markdown for docs/performance.md.
import { type ModeResult, PARTS, SEQUENTIAL_N } from './compare.js';
import { BACK_TO_BACK_MS, ourCpu, round, THINK_MS } from './measure.js';

export function report(r: ModeResult): string {
  const sq = r.sequential;
  const row = (label: string, k: string): string => `| ${label} | ${sq[k]?.p50} | ${sq[k]?.p95} |`;
  const lines = [
    `### CHROMIUM=${r.mode} (${r.version})`,
    '',
    `| sequential, \`return await page.title()\` (n=${SEQUENTIAL_N} each) | p50 ms | p95 ms |`,
    '|---|---|---|',
    row(`floor: goto+title on an open page, ${THINK_MS} ms apart`, 'floor'),
    row(`the same back to back (${BACK_TO_BACK_MS} ms apart)`, 'floorBackToBack'),
    row('raw Puppeteer, same binary, fresh context+page per request', 'rawFreshContext'),
    row(`raw Puppeteer, same binary, context+page made ahead, ${THINK_MS} ms apart`, 'rawPrepared'),
    row(`the same back to back (${BACK_TO_BACK_MS} ms apart)`, 'rawPreparedBackToBack'),
    row('raw Puppeteer with stock flags on full Chromium, fresh context+page (reference)', 'rawStockFullFreshContext'),
    row(`pagescript (HTTP, fresh context + isolate), ${THINK_MS} ms apart`, 'service'),
    row(`pagescript back to back (${BACK_TO_BACK_MS} ms apart)`, 'serviceBackToBack'),
    '',
    `pagescript/floor p50: **${r.ratios.sequentialP50ServiceOverFloor}** ${THINK_MS} ms apart, **${r.ratios.backToBackP50ServiceOverFloor}** back to back`,
    '',
    `raw Puppeteer with a context made ahead/floor p50: ${r.ratios.sequentialP50RawPreparedOverFloor} ${THINK_MS} ms apart, ${r.ratios.backToBackP50RawPreparedOverFloor} back to back; pagescript/that: ${r.ratios.sequentialP50ServiceOverRawPrepared} and ${r.ratios.backToBackP50ServiceOverRawPrepared}`,
    '',
    '| clients | pagescript req/s | p95 ms | raw same binary req/s | p95 ms | raw stock full req/s | p95 ms | /raw | /stock full |',
    '|---|---|---|---|---|---|---|---|---|',
    ...r.concurrency.map(
      (x) =>
        `| ${x.clients} | ${x.service.rps} | ${x.service.p95} | ${x.raw.rps} | ${x.raw.p95} | ${x.stockFull.rps} | ${x.stockFull.p95} | ${round(x.service.rps / x.raw.rps, 2)} | ${round(x.service.rps / x.stockFull.rps, 2)} |`,
    ),
    '',
    '| CPU per request, ms (every level at full load) | service: Node (front, slots) | service: egress | service: ours (Node + egress) | service: Chromium | client | raw: Chromium | raw: client | ours / raw client | stock full: Chromium |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...r.concurrency.map(
      (x) =>
        `| ${x.clients} clients | ${x.service.cpu.node} | ${x.service.cpu.egress} | ${ourCpu(x.service.cpu)} | ${x.service.cpu.chromium} | ${x.service.cpu.client} | ${x.raw.cpu.chromium} | ${x.raw.cpu.client} | **${x.ourCpuOverRawClient}** | ${x.stockFull.cpu.chromium} |`,
    ),
    '',
    '| machine idle CPU per throughput phase, % of all cores (/proc/stat) | pagescript | raw same binary | raw stock full |',
    '|---|---|---|---|',
    ...r.concurrency.map(
      (x) => `| ${x.clients} clients | ${x.service.idlePct} | ${x.raw.idlePct} | ${x.stockFull.idlePct} |`,
    ),
    '',
    '| service time split (p50 ms) | ' + PARTS.join(' | ') + ' |',
    '|---|' + PARTS.map(() => '---').join('|') + '|',
    '| | ' + PARTS.map((k) => r.split[k]).join(' | ') + ' |',
    '',
    '| memory | service RSS MB | service PSS MB | Chromium RSS MB (sum) | Chromium PSS MB | Chromium processes | whole tree PSS MB |',
    '|---|---|---|---|---|---|---|',
    ...(['rest', 'load'] as const).map((k) => {
      const m = r.memory[k];
      return `| ${k === 'rest' ? 'at rest' : 'under load (peak, 8 clients)'} | ${m.serviceRssMb} | ${m.servicePssMb} | ${m.chromiumRssMb} | ${m.chromiumPssMb} | ${m.chromiumProcesses} | ${m.treePssMb} |`;
    }),
    '',
    'targets: ' +
      Object.entries(r.targets)
        .map(([k, v]) => `${k}: ${v ? 'met' : 'NOT met'}`)
        .join('; '),
    '',
  ];
  return lines.join('\n');
}
