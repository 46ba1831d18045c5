/**
 * Writes docs/configuration.md from the configuration schema (`ConfigFromEnv`, schemas/config.ts): every
 * setting's environment variable name, the type it accepts, its default and its `.describe()` text, so the
 * reference cannot drift from what the sync validates. `npm run docs:config`;
 * test/unit/docs.test.ts fails when the file is stale.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { ConfigFromEnv } from '../schemas/config.js';

/** The part of a JSON Schema (draft 2020-12, as zod writes it) this page reads. */
interface JsonSchema {
  type?: string;
  format?: string;
  pattern?: string;
  enum?: unknown[];
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  default?: unknown;
  description?: string;
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

const FORMATS: Record<string, string> = {
  uri: 'URL',
  duration: 'ISO 8601 duration (`PT72H`, `P7D`)',
  'date-time': 'ISO 8601 instant',
  date: 'ISO 8601 date',
};

/** Zod writes `Number.MAX_SAFE_INTEGER` as the maximum of every `.int()`: not a bound anyone chose. */
const NO_BOUND = Number.MAX_SAFE_INTEGER;

function typeOf(schema: JsonSchema): string {
  if (schema.anyOf) return schema.anyOf.map(typeOf).join(' or ');
  if (schema.enum) return `one of ${schema.enum.map((v) => `\`${String(v)}\``).join(', ')}`;
  if (schema.format && FORMATS[schema.format]) return FORMATS[schema.format]!;
  const bounds = [
    schema.minimum !== undefined ? `≥ ${schema.minimum}` : undefined,
    schema.exclusiveMinimum !== undefined ? `> ${schema.exclusiveMinimum}` : undefined,
    schema.maximum !== undefined && schema.maximum !== NO_BOUND ? `≤ ${schema.maximum}` : undefined,
    schema.exclusiveMaximum !== undefined ? `< ${schema.exclusiveMaximum}` : undefined,
  ].filter((b) => b !== undefined);
  const base = schema.type === 'string' ? 'text' : (schema.type ?? 'any');
  const pattern = schema.pattern ? ` matching \`${schema.pattern}\`` : '';
  return `${base}${bounds.length > 0 ? ` ${bounds.join(', ')}` : ''}${pattern}`;
}

/** The documentation of one setting; a setting without a `.describe()` is refused (the page is its reference). */
function settingSection(name: string, schema: JsonSchema, required: boolean): string {
  if (!schema.description)
    throw new Error(
      `schemas/config.ts: ${name} has no .describe(): say what it does, for docs/configuration.md`,
    );
  const fallback = required ? 'required' : 'none (optional)';
  const defaultText = schema.default === undefined ? fallback : `\`${String(schema.default)}\``;
  const description = schema.description.endsWith('.') ? schema.description : `${schema.description}.`;
  return `### ${name}\n\n${description}\n\n- Type: ${typeOf(schema)}\n- Default: ${defaultText}\n`;
}

const INTRO = `# Configuration

Generated from \`schemas/config.ts\` by \`npm run docs:config\` — edit the schema's \`.describe()\` strings, not
this file.

Every setting is an environment variable. \`--config <file>\` (on every command) reads the same names from a
YAML or JSON file; the environment wins over the file. The whole configuration is validated before anything
starts: a bad value prints one line per problem, naming the variable, and the command exits with code 2.

\`npm start\` fills what is not configured with embedded defaults: without \`SUPPORT_API_URL\` it starts the seeded
companion (and sets \`SUPPORT_API_KEY\`, \`REPORT_QUERIES\` and \`SUPPORT_API_RATE_WINDOW\` for it), without
\`DESTINATION_URL\` an embedded PostgreSQL, without \`TEMPORAL_ADDRESS\` a Temporal dev server (as \`sync --once\`
does too). Which settings matter first against a real workspace: [Getting started](getting-started.md).

`;

const OUTSIDE_THE_SCHEMA = `## Read outside the configuration schema

These are read by the process that needs them, not validated with the rest:

| Variable | Read by | What |
|---|---|---|
| \`SUPPORT_SYNC_DATA_DIR\` | \`npm start\`, \`status\`, \`plan\` | where the embedded PostgreSQL, the Temporal history, \`demo.yaml\` and \`plan\`'s last forecast are kept (default \`.data\`) |
| \`TEMPORAL_CLI\` | the embedded Temporal dev server | path to a \`temporal\` binary to use instead of finding or building one |
| \`SUPPORT_SYNC_CACHE\` | provisioning | where the built Temporal CLI and the BigQuery emulator's virtualenv are kept (default \`~/.cache/support-sync\`) |
| \`NODE_OPTIONS\` | node | \`--max-old-space-size=512\` bounds a whole worker process ([worker memory](operations/worker-memory.md)) |
| \`DATABASE_URL\` | tests | a PostgreSQL (must allow \`CREATE DATABASE\`) to use instead of an embedded cluster |
| \`SUPPORT_SYNC_BQEMULATOR_LOG\` | tests | a file the BigQuery emulator's own output is appended to |
| \`SUPPORT_SYNC_BQEMULATOR_MAX_SPILL\` | tests | the most the emulator's DuckDB may spill to disk (default \`4GB\`) |
`;

/**
 * A setting's default from the zod schema itself: the JSON Schema of an input drops the default of a setting
 * whose value is transformed (TEMPORAL_UI_URL's URL check), which the page would then call "none".
 */
function schemaDefault(name: string): unknown {
  const setting = ConfigFromEnv.shape[name as keyof typeof ConfigFromEnv.shape];
  return setting instanceof z.ZodDefault ? setting.def.defaultValue : undefined;
}

export function renderConfigDocs(): string {
  const schema = z.toJSONSchema(ConfigFromEnv, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const required = new Set(schema.required ?? []);
  const sections = Object.entries(schema.properties ?? {}).map(([name, setting]) =>
    settingSection(name, { default: schemaDefault(name), ...setting }, required.has(name)),
  );
  return `${INTRO}## Settings\n\n${sections.join('\n')}\n${OUTSIDE_THE_SCHEMA}`;
}

export const CONFIG_DOCS_PATH = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));

if (import.meta.url === `file://${process.argv[1]}`) {
  await writeFile(CONFIG_DOCS_PATH, renderConfigDocs());
  console.log(`wrote ${CONFIG_DOCS_PATH}`);
}
