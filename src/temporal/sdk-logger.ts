// The Temporal SDK's log lines (its worker, and the workflows' and activities' own loggers)
// written through the process's pino logger: one JSON format for everything a process says.
import type { Logger as TemporalLogger, LogLevel, LogMetadata } from '@temporalio/common';
import type { Logger } from 'pino';

const LEVELS = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;

export function temporalLogger(log: Logger): TemporalLogger {
  const sdk = log.child({ component: 'temporal-sdk' });
  const write = (level: LogLevel, message: string, meta?: LogMetadata) => {
    // An error in the metadata is serialised as pino serialises `err` (message and stack).
    const { error, ...rest } = (meta ?? {}) as LogMetadata & { error?: unknown };
    sdk[LEVELS[level]]({ ...rest, ...(error !== undefined ? { err: error } : {}) }, message);
  };
  return {
    log: write,
    trace: (message, meta) => write('TRACE', message, meta),
    debug: (message, meta) => write('DEBUG', message, meta),
    info: (message, meta) => write('INFO', message, meta),
    warn: (message, meta) => write('WARN', message, meta),
    error: (message, meta) => write('ERROR', message, meta),
  };
}
