// Guards a role's start-up, from the first line of main until it serves.
//
// 1. It keeps the event loop alive for the whole start, as src/event-loop-hold.ts does for
//    one step (PGlite's WebAssembly compile, the trigger measured here): Node never drains
//    V8's background tasks from an empty loop (nodejs/node#54918, #64560; still in Node
//    24.22), whatever else in a start may wait on V8 alone. Once the role serves, its
//    listening socket or its worker's threads keep the loop busy.
// 2. It bounds the start: a role not serving within START_TIMEOUT_SECONDS logs the step it
//    was waiting for and exits non-zero, so supervisors see a failure they can restart.
import type { Logger } from 'pino';

export interface StartProgress {
  /** Names what the start waits for now (shown if it never finishes). */
  step(name: string): void;
}

export const noProgress: StartProgress = { step() {} };

/** The exit code of a start that did not finish in time (EX_SOFTWARE would be 70; 75 is EX_TEMPFAIL: try again). */
export const START_TIMEOUT_EXIT_CODE = 75;

export class StartWatchdog implements StartProgress {
  private current = 'loading modules';
  private since = Date.now();
  private readonly started = Date.now();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly timeoutSeconds: number,
    private readonly log: Pick<Logger, 'fatal' | 'debug'>,
    private readonly exit: (code: number) => void = (code) => process.exit(code),
  ) {
    // Deliberately ref'd: this timer is the handle that keeps the loop alive (see above).
    this.timer = setTimeout(() => this.expire(), timeoutSeconds * 1000);
  }

  step(name: string): void {
    this.log.debug({ step: name, afterMs: Date.now() - this.started }, 'start step');
    this.current = name;
    this.since = Date.now();
  }

  /** The role serves: the guard goes. */
  serving(): void {
    clearTimeout(this.timer);
  }

  private expire(): void {
    const detail = {
      step: this.current,
      stepSeconds: Math.round((Date.now() - this.since) / 1000),
      timeoutSeconds: this.timeoutSeconds,
      activeResources: process.getActiveResourcesInfo(),
    };
    const message = `not serving after START_TIMEOUT_SECONDS=${this.timeoutSeconds}: still waiting for ${this.current} (for ${detail.stepSeconds} s); exiting`;
    this.log.fatal(detail, message);
    this.exit(START_TIMEOUT_EXIT_CODE);
  }
}
