// Scripts that more than one test sends.

/**
 * A request working beside another for a few seconds: small calls (a request
 * that only sleeps is idle, and nobody is paused for it), less in all than its
 * own CPU budget (src/slot/browser/page-memory.ts PAGE_CPU_BUDGET_MS).
 */
export const WORKING_BESIDE = `const end = Date.now() + 3000; let title;
  while (Date.now() < end) { title = await page.title(); await new Promise((r) => setTimeout(r, 50)); }
  return title`;
