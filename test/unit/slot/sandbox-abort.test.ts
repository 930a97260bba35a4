// The reason a script was ended is what the caller hears, whenever the end came.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ApiError, scrapingFailed } from '../../../src/common/errors.js';
import { releaseBundleCache } from '../../../src/slot/membrane/bundle.js';
import { ScriptSandbox } from '../../../src/slot/membrane/script-sandbox.js';
import { collectBeforeExit } from '../../helpers/ivm-exit.js';

// As the slot process does at shutdown: an isolated-vm handle (the bundle's code cache) left to the
// garbage collector at exit aborts the process (SIGABRT, IsolateEnvironment::GetCurrent's assertion).
after(() => releaseBundleCache());
// Then what was released, and every other wrapper, is collected before the exit (after hooks run in turn).
collectBeforeExit();

const OPTIONS = { memoryLimitMb: 32, maxResultBytes: 1024, maxLogLines: 10, maxLogBytes: 1024, defaultTimeoutMs: 1000 };

test('a page crash before the script compiles is reported as the crash, not as a SyntaxError', async () => {
  const box = await ScriptSandbox.create(OPTIONS);
  try {
    // As the job does when the page crashes while cheerio loads during the navigation.
    const crash = scrapingFailed('the page crashed (it may have run out of memory)');
    box.abort(crash);
    await assert.rejects(box.execute('return 1', 1000), (e: unknown) => {
      assert.equal(e, crash);
      return true;
    });
  } finally {
    box.dispose();
  }
});

test('a real syntax error is still reported with its line and column', async () => {
  const box = await ScriptSandbox.create(OPTIONS);
  try {
    await assert.rejects(box.execute('let x = ;', 1000), (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.code, 'SCRAPING_FAILED');
      assert.match(e.message, /^Script execution failed: SyntaxError: .* \(line 1, column \d+\)$/);
      return true;
    });
  } finally {
    box.dispose();
  }
});
