// Parts of hostile scripts that the neighbour bench (neighbour.ts) and the
// tests of one request's host work (test/e2e/slot/request-host-work.test.ts) both
// run: one text, so that the bench measures the attack the test defends.
// The bench folder holds them because tests may import scripts/bench, never
// the other way round.

/**
 * Declares `forged(src)`: a page function the isolate sends as {"$ps":"f","src":…} with any text. A Proxy
 * hides "$ps" from the runtime's own check once, then shows it to JSON.stringify (issue 32): the membrane,
 * not the runtime, must bound what reaches Puppeteer.
 */
export const FORGED_FUNCTION = `const forged = (src) => {
    let hidden = false;
    return new Proxy({ $ps: 'f', src }, {
      getOwnPropertyDescriptor(t, k) {
        if (k === '$ps' && !hidden) { hidden = true; return undefined; }
        return Reflect.getOwnPropertyDescriptor(t, k);
      },
    });
  };`;

/**
 * Keeps the isolate busy until the page's URL ends with "#flooded" (or the deadline): its thread waits
 * (Atomics.wait, no timer, no CPU taken from the page) between sync calls, which take no event.
 */
export const BUSY_UNTIL_FLOODED = `const parked = new Int32Array(new SharedArrayBuffer(4));
  while (!page.url().endsWith('#flooded')) Atomics.wait(parked, 0, 0, 20);`;
