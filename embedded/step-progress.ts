/**
 * Progress of the slow steps of a first start (building the Temporal CLI, initialising PostgreSQL,
 * provisioning the BigQuery emulator, bundling the workflows), so that a first start is never silent:
 *  - on a terminal, one live line per step, redrawn every second with the elapsed time and the latest
 *    detail, then replaced by its result;
 *  - elsewhere (piped, CI logs), plain lines: when the step starts, at most one every `everyMs` (10 s)
 *    while it runs — even without news, so a reader knows it is alive — and when it ends.
 * Independent of LOG_LEVEL: this is the user-facing output, not a log.
 */
export interface Step {
  /** What the step is at now, e.g. "412 packages compiled". */
  update(detail: string): void;
  /** The step finished; `result` replaces the live line (default "done"). */
  end(result?: string): void;
  /** The step failed; prints the reason. */
  fail(reason: string): void;
}

/** Starts a step; `note` (e.g. why it takes long) is said once, when the step starts. */
export type StepStarter = (label: string, note?: string) => Step;

export interface StepReporterOptions {
  /** Where lines go; default stderr. */
  write?: (text: string) => void;
  /** Live line (terminal) or plain lines; default: whether stderr is a TTY. */
  tty?: boolean;
  /** Plain mode: the longest silence between two lines of a running step. */
  everyMs?: number;
  /** Clock (tests). */
  now?: () => number;
}

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;

export function createStepReporter(options: StepReporterOptions = {}): StepStarter {
  const write = options.write ?? ((text: string) => process.stderr.write(text));
  const tty = options.tty ?? process.stderr.isTTY === true;
  const everyMs = options.everyMs ?? 10_000;
  const now = options.now ?? Date.now;
  return (label, note) => {
    const started = now();
    let detail = '';
    let lastLine = started;
    let finished = false;
    const line = () => `${label}… ${seconds(now() - started)}${detail ? `, ${detail}` : ''}`;
    const draw = () => {
      if (finished) return;
      if (tty) write(`\r\x1b[2K${line()}`);
      else if (now() - lastLine >= everyMs) {
        write(`${line()}\n`);
        lastLine = now();
      }
    };
    if (tty) {
      if (note) write(`${label}: ${note}\n`);
      draw();
    } else write(`${label}…${note ? ` ${note}` : ''}\n`);
    const timer = setInterval(draw, tty ? 1000 : Math.min(everyMs, 1000));
    timer.unref();
    const close = (text: string) => {
      if (finished) return;
      finished = true;
      clearInterval(timer);
      write(`${tty ? '\r\x1b[2K' : ''}${text}\n`);
    };
    return {
      update(next) {
        detail = next;
        draw();
      },
      end(result = 'done') {
        close(`${label}: ${result} (${seconds(now() - started)})`);
      },
      fail(reason) {
        close(`${label}: failed after ${seconds(now() - started)}: ${reason}`);
      },
    };
  };
}

/** Runs `work` as a step: started, ended with its result text, or failed with the error's message. */
export async function asStep<T>(
  step: StepStarter | undefined,
  label: string,
  work: (s: Step | undefined) => Promise<T>,
  result?: (value: T) => string,
): Promise<T> {
  const s = step?.(label);
  try {
    const value = await work(s);
    s?.end(result?.(value));
    return value;
  } catch (err) {
    s?.fail(err instanceof Error ? err.message.split('\n')[0]! : String(err));
    throw err;
  }
}
