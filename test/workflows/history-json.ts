import { createRequire } from 'node:module';
import proto, { type temporal } from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root.js';

type History = temporal.api.history.v1.IHistory;

/**
 * History ↔ the JSON of `temporal workflow show --output json` (protobuf's canonical JSON form).
 *
 * The SDK has this as `historyToJSON` / `historyFromJSON` (`@temporalio/common`), and `Worker.runReplayHistories`
 * calls the latter for JSON input; but with this project's lock file npm installs two copies of protobufjs 8
 * (one under @temporalio/common, one under @temporalio/proto: the root's protobufjs 7 keeps them from being
 * hoisted), and the SDK's helper, holding the one copy's JSON extension and the other copy's message types,
 * fails with "type must be a Type". These functions take the JSON extension from the same copy as the types.
 */
const protojson = createRequire(createRequire(import.meta.url).resolve('@temporalio/proto'))(
  'protobufjs/ext/protojson',
) as {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options: { ignoreUnknownFields: boolean }): History | null;
};
const historyType =
  // The CommonJS exports object itself (a namespace import would hide the protobuf root behind a wrapper).
  (
    patchProtobufRoot(proto as unknown as Record<string, unknown>) as unknown as {
      lookupType(name: string): unknown;
    }
  ).lookupType('temporal.api.history.v1.History');

/** A history (as `handle.fetchHistory()` returns it) in the JSON form the CLI and the UI write. */
export function historyToJson(history: History): string {
  const message = proto.temporal.api.history.v1.History.fromObject(history);
  return JSON.stringify(protojson.toJson(historyType, message), null, 2);
}

/** A history read from such JSON. Fields a newer server added are ignored, as the SDK's helper does. */
export function historyFromJson(json: unknown): History {
  const history = protojson.fromJson(historyType, json, { ignoreUnknownFields: true });
  if (!history) throw new TypeError('not a workflow history');
  return history;
}
