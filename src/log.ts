// Structured logs: one JSON line per event, object first. API keys, script
// bodies and page contents are never logged.
import { pino, type Logger as PinoLogger } from 'pino';
import type { LogLevel } from './config.js';

export type Logger = Pick<PinoLogger, 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'child'>;

export function createLogger(level: LogLevel): Logger {
  return pino({
    level,
    base: { service: 'pagescript' },
    redact: { paths: ['key', 'apiKey', 'headers["x-gateway-key"]', 'script'], censor: '[redacted]' },
  });
}

/** A logger that writes nothing (tests, tools). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
