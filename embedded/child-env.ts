/**
 * The environment a helper process of the demo starts with (initdb, postgres, the BigQuery emulator, a
 * `go install`): what a program needs to run — the search path, home, user, locale, temp folder, proxies,
 * Go's and Python's own settings, and our SUPPORT_SYNC_* runtime switches — and nothing else. An allowlist,
 * not a denylist: the sync's settings (SUPPORT_API_KEY, SYNC_HASH_KEY, TEMPORAL_API_KEY, DESTINATION_URL,
 * POSTGRES_PASSWORD, cloud credentials…) stay in this process whatever they are called, so a child that
 * dumps its environment (a crash report, /proc/<pid>/environ read by its user) cannot show them.
 */

const KEPT_NAMES = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TERM',
  'TMPDIR',
  'TMP',
  'TEMP',
  'SYSTEMROOT',
  'COMSPEC',
  'PATHEXT',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'XDG_CACHE_HOME',
  'PIP_INDEX_URL',
  'PIP_CACHE_DIR',
  'VIRTUAL_ENV',
]);
const KEPT_PREFIXES = ['LC_', 'GO', 'SUPPORT_SYNC_'];

/** Names that carry a secret even under a kept prefix (PASS: PASSWORD, PASSWD, PASSPHRASE, DB_PASS…). */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASS|CREDENTIAL/i;

/** The kept part of `env` (default: this process's), with `extra` added (a child's own settings). */
export function childEnvironment(
  extra: Readonly<Record<string, string>> = {},
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    const allowed = KEPT_NAMES.has(name) || KEPT_PREFIXES.some((p) => name.startsWith(p));
    if (allowed && !SECRET_NAME.test(name)) kept[name] = value;
  }
  return { ...kept, ...extra };
}

/**
 * Runs `start` with this process's environment narrowed to `childEnvironment()`, then restores it: for a
 * child that a library spawns without an `env` option (the SDK's native core starts the Temporal dev
 * server with the whole environment of the process). The narrowing lasts only while `start` runs; the
 * configuration has been read by then.
 */
export async function withChildEnvironment<T>(start: () => Promise<T>): Promise<T> {
  const kept = childEnvironment();
  const removed: [string, string][] = [];
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !(name in kept)) {
      removed.push([name, value]);
      delete process.env[name];
    }
  }
  try {
    return await start();
  } finally {
    for (const [name, value] of removed) process.env[name] = value;
  }
}
