// Loaded into the real front (src/front/server.ts, with node --import) by
// test/e2e/front/front-errors.test.ts only: on SIGUSR2 the front fails as
// PAGESCRIPT_TEST_FRONT_FAULT says, "throw" (an exception nobody catches) or
// "reject" (a rejection nobody handles). No request, script or page can do this:
// it stands for a bug of the front, which its last-resort handlers must report.
const kind = process.env.PAGESCRIPT_TEST_FRONT_FAULT;
process.on('SIGUSR2', () => {
  if (kind === 'throw')
    setImmediate(() => {
      throw new Error('a fault of the front the test asked for');
    });
  // eslint-disable-next-line @typescript-eslint/no-floating-promises -- the point: a rejection nobody handles
  else if (kind === 'reject') Promise.reject(new Error('a fault of the front the test asked for'));
});
