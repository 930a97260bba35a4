// A BrowserHost launched as a slot process launches it, here in the test process
// (outside the membrane), behind a real egress guard that lets its contexts
// reach one loopback fixture only: for tests that drive Chromium's contexts
// and pipe directly.
import { BrowserHost } from '../../src/slot/browser/browser-host.js';
import { loadConfig } from '../../src/common/config.js';
import { EgressChecker, type Resolver } from '../../src/egress/checker.js';
import { EgressGuard } from '../../src/egress/guard.js';
import { silentLogger, type Logger } from '../../src/common/log.js';

/** The settings that choose the Chromium the suite runs on (CHROMIUM=shell|full, or PUPPETEER_EXECUTABLE_PATH). */
export function suiteChromiumEnv(): Record<string, string> {
  return {
    ...(process.env.PUPPETEER_EXECUTABLE_PATH
      ? { PUPPETEER_EXECUTABLE_PATH: process.env.PUPPETEER_EXECUTABLE_PATH }
      : {}),
    ...(process.env.CHROMIUM ? { CHROMIUM: process.env.CHROMIUM } : {}),
  };
}

export interface GuardedHost {
  readonly host: BrowserHost;
  readonly guard: EgressGuard;
  close(): Promise<void>;
}

/**
 * Starts the guard and the host. SECURITY (of the test): the guard allows
 * 127.0.0.1:fixturePort alone, and only names `resolve` answers resolve (none
 * by default: the fixture is reached by its address).
 */
export async function startGuardedHost(opts: {
  fixturePort: number;
  resolve?: Resolver;
  logger?: Logger;
  testTrustedSpki?: string[];
}): Promise<GuardedHost> {
  const config = loadConfig(suiteChromiumEnv());
  const guard: EgressGuard = new EgressGuard({
    checker: new EgressChecker({
      allowlist: [{ host: '127.0.0.1', port: opts.fixturePort }],
      protectedPorts: () => guard.ports(),
      resolve: opts.resolve ?? (() => Promise.reject(new Error('no such name'))),
      localAddresses: () => [],
    }),
    logger: silentLogger(),
  });
  const guardPort = await guard.listen();
  const host = new BrowserHost({
    executablePath: config.executablePath,
    chromium: config.chromium,
    guardPort,
    openEgress: () => guard.openSession(),
    protocolTimeoutMs: 30_000,
    prewarmedContexts: 0,
    recycleAfterContexts: 0,
    logger: opts.logger ?? silentLogger(),
    ...(opts.testTrustedSpki ? { testTrustedSpki: opts.testTrustedSpki } : {}),
  });
  await host.start();
  return {
    host,
    guard,
    close: async () => {
      await host.close();
      await guard.close();
    },
  };
}
