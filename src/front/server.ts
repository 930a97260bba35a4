// The process shell: read the configuration, start the service, print the
// generated key, and shut down cleanly on SIGTERM/SIGINT. The only file that
// touches process signals.
// SECURITY: first, before anything else runs: the machine's root never serves (src/front/host/host-root-drop.ts).
import { droppedFromHostRoot } from './host/host-root-drop.js';
import { ConfigError, loadConfig } from '../common/config.js';
import { createLogger } from '../common/log.js';
import { startService } from './service.js';

/** How long a shutdown may take beyond SHUTDOWN_GRACE_MS before the process exits anyway. */
const SHUTDOWN_KILL_MARGIN_MS = 15_000;
/** Exit status after an uncaught exception (EX_SOFTWARE), and the time the log line gets to leave. */
const EXIT_FATAL = 70;
const FATAL_FLUSH_MS = 200;

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`pagescript: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const logger = createLogger(config.logLevel);
  if (droppedFromHostRoot !== undefined)
    logger.warn(
      { user: droppedFromHostRoot.user, uid: droppedFromHostRoot.uid },
      "started as the machine's root (no user namespace of its own): dropped to the image's one user, so slots share it and the kernel lock is off; run the container with a user namespace to keep them apart (docs/container.md)",
    );
  // No error ends the front silently. An error nobody caught is a bug of the
  // front (scripts, pages and upstreams are handled in the slot processes): it is
  // logged with its stack, and the process exits for its supervisor to restart
  // it, as Node's documentation advises. A rejection nobody handled is logged.
  process.on('uncaughtException', (err) => {
    logger.fatal({ err }, 'uncaught exception; exiting');
    process.exitCode = EXIT_FATAL;
    setTimeout(() => process.exit(EXIT_FATAL), FATAL_FLUSH_MS).unref();
  });
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));
  const service = await startService(config, logger, {
    onGeneratedKey: (key) => {
      // Printed once, to the terminal, never to the log.
      process.stdout.write(
        `\nAPI_KEYS is not set; generated an API key for this run:\n\n  ${key}\n\n` +
          `Send it as the X-Gateway-Key header. Set API_KEYS to keep keys across restarts.\n\n`,
      );
    },
  });
  process.stdout.write(`pagescript is listening on http://${config.host}:${service.port}\n`);

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => process.exit(1), config.shutdownGraceMs + SHUTDOWN_KILL_MARGIN_MS).unref();
    service.shutdown().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((e: unknown) => {
  process.stderr.write(`pagescript failed to start: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
