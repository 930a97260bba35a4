// Scripts that more than one test sends.

/** A request working beside another for a few seconds: small calls, a few dozen ms of CPU in all. */
export const WORKING_BESIDE = `const end = Date.now() + 3000; let title;
  while (Date.now() < end) { title = await page.title(); await new Promise((r) => setTimeout(r, 50)); }
  return title`;
