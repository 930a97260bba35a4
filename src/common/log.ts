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

/** A logger that writes nothing (tests, tools). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
