import pino, { type DestinationStream, type Logger } from 'pino';
import type { Scrubber } from '../connectors/support-api/server-text.js';
import { Secrets } from '../schemas/secret.js';
import { safeLogArguments, withSerializedErrors } from './log-errors.js';
import { workspaceLogFields } from './workspace-context.js';

/**
 * One pino logger for the process, to stderr (stdout is reserved for machine-readable output such as the
 * sync summary line). Temporal's native runtime logs through it at warn and above (worker/temporal-runtime.ts).
 * Whatever a call passes — an Error, an object holding errors or secrets at any depth, a message with values
 * interpolated — every text of the line is scrubbed of `secrets`, its invisible characters escaped and cut,
 * and every error keeps its message (worker/log-errors.ts). `secrets` may grow after the logger is made (a
 * Temporal profile's API key): what it holds when a line is written is scrubbed. A line written in an
 * activity of another workspace than `default` — whoever writes it: the activity, the API client, the
 * destination — has that workspace as its `workspace` field; outside an activity, `workspace` (the
 * process's own, SYNC_WORKSPACE) does when it is not `default` (worker/workspace-context.ts).
 */
export function createLogger(
  level: string,
  secrets: Scrubber = new Secrets(),
  destination: DestinationStream = pino.destination(2),
  workspace?: string,
): Logger {
  const logger = pino(
    {
      level,
      base: null,
      // The line's own fields win over it (a line naming a workspace it speaks of).
      mixin: () => workspaceLogFields(workspace),
      // Before pino reads the arguments: it takes an Error's message as the line's `msg` itself.
      hooks: {
        logMethod(args, method) {
          method.apply(this, safeLogArguments(args, secrets) as Parameters<typeof method>);
        },
      },
      // The errors are plain JSON by now: pino's own `err` serializer would retype them as `Object`.
      serializers: { err: (value: unknown) => value },
    },
    destination,
  );
  // A child's fields are written as given (pino's bindings formatter applies to the root only): made safe
  // here, for every child and grandchild (each is created from its parent's prototype, this method with it).
  const child = logger.child;
  logger.child = function safeChild(this: Logger, bindings, options) {
    return child.call(this, withSerializedErrors(bindings, secrets), options);
  } as Logger['child'];
  return logger;
}
