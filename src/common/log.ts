// Structured logs: one JSON line per event, object first. API keys, script
// bodies and page contents are never logged.
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import type { LogLevel } from './config.js';

export type Logger = Pick<PinoLogger, 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'child' | 'level'>;

/** The service's logger: to stdout, or to the given stream (tests read what it writes). */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'pagescript' },
    redact: { paths: ['key', 'apiKey', 'headers["x-gateway-key"]', 'script'], censor: '[redacted]' },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}

/**
 * The fields that name a slot process on a log line: `slotPid`, and beside it
 * `executor`, its old name, kept one release for operators' queries
 * (deprecated: docs/operations.md, "Deprecated names").
 */
export function slotPidFields(pid: number | undefined): { slotPid: number | undefined; executor: number | undefined } {
  return { slotPid: pid, executor: pid };
}

/** A logger that writes nothing (tests, tools). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
