import { readFileSync } from 'node:fs';
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import {
  type ClientConfigProfile,
  type ConfigDataSource,
  loadClientConfigProfile,
  toClientOptions,
} from '@temporalio/envconfig';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import { type Config, HostPort, isLoopbackUrl } from '../schemas/config.js';
import { Secret, Secrets, secretsOf } from '../schemas/secret.js';
import { ConfigError } from './config.js';

/** The Temporal settings read through the SDK's environment configuration (`@temporalio/envconfig`). */
const ENVCONFIG_SETTINGS = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_API_KEY',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_CERT_DATA',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_DATA',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_PROFILE',
  'TEMPORAL_CONFIG_FILE',
] as const satisfies readonly (keyof Config)[];

/** Where the SDK looks for the default temporal.toml (and gRPC metadata it passes on as given). */
const LOCATION_VARIABLES = ['HOME', 'XDG_CONFIG_HOME', 'APPDATA'];
const GRPC_META_PREFIX = 'TEMPORAL_GRPC_META_';

/** The address used when none is configured and nothing is embedded (`worker`, `setup`, `schedule`). */
export const DEFAULT_TEMPORAL_ADDRESS = 'localhost:7233';

/** How this process connects to a Temporal cluster: the settings merged with the profile, checked. */
export interface TemporalConnectionSettings {
  /** The configured address (TEMPORAL_ADDRESS, else the profile's); undefined when neither gives one. */
  readonly address: string | undefined;
  /** Which setting named the address, for messages (`TEMPORAL_ADDRESS`, `profile "cloud" of <file>`). */
  readonly addressSource: string;
  readonly namespace: string;
  readonly apiKey: Secret | undefined;
  /**
   * The secrets the connection holds — the API key and the client's private key, wherever they came from
   * (a setting, or a profile of the TOML file) — for the process's logger to scrub like the settings' own.
   */
  readonly secrets: readonly Secret[];
  /** TLS options for the SDK (certificates read), `true` for TLS with the system's roots, or off. */
  readonly tls: NativeConnectionOptions['tls'];
  readonly metadata: NativeConnectionOptions['metadata'];
}

/** The PEM inputs of a TLS profile: the profile's field, its environment setting, and its name in TOML. */
const PEM_FIELDS = [
  { field: 'clientCert', setting: 'TEMPORAL_TLS_CLIENT_CERT', toml: 'client_cert', kind: 'a certificate' },
  { field: 'clientKey', setting: 'TEMPORAL_TLS_CLIENT_KEY', toml: 'client_key', kind: 'a private key' },
  {
    field: 'serverCACert',
    setting: 'TEMPORAL_TLS_SERVER_CA_CERT',
    toml: 'server_ca_cert',
    kind: 'a certificate',
  },
] as const;

/**
 * Resolves the Temporal connection from the configuration and the Temporal client configuration file: the
 * SDK's loader (`loadClientConfigProfile`) applies the profile (TEMPORAL_PROFILE of TEMPORAL_CONFIG_FILE or
 * the default temporal.toml) and overlays every TEMPORAL_* setting, exactly as the Temporal CLI does. The
 * certificate and key files are read here, so that a missing or unreadable one is a configuration problem
 * naming its setting (exit 2), not a failure deep in the first connection.
 */
export function resolveTemporalConnection(
  config: Config,
  env: NodeJS.ProcessEnv = process.env,
): TemporalConnectionSettings {
  const vars: Record<string, string> = {};
  for (const name of LOCATION_VARIABLES) if (env[name]) vars[name] = env[name]!;
  for (const [name, value] of Object.entries(env))
    if (name.startsWith(GRPC_META_PREFIX) && value !== undefined) vars[name] = value;
  for (const name of ENVCONFIG_SETTINGS) {
    const value = config[name];
    // The secrets are revealed only to the SDK's loader, which hands them to the connection.
    if (value !== undefined) vars[name] = value instanceof Secret ? value.reveal() : value;
  }
  const file = config.TEMPORAL_CONFIG_FILE;
  if (file !== undefined) {
    try {
      readFileSync(file);
    } catch (err) {
      throw new ConfigError([
        `TEMPORAL_CONFIG_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      ]);
    }
  }
  const fileName = file ?? 'the default temporal.toml';
  let profile: ClientConfigProfile;
  try {
    profile = loadClientConfigProfile({ overrideEnvVars: vars });
  } catch (err) {
    const message = new Secrets(secretsOf(config)).scrub((err as Error).message.split('\n')[0]!);
    if (/^Profile '.*' not found/.test(message))
      throw new ConfigError([`TEMPORAL_PROFILE: no profile "${config.TEMPORAL_PROFILE}" in ${fileName}`]);
    throw new ConfigError([`TEMPORAL_CONFIG_FILE (${fileName}): ${message}`]);
  }
  const profileName = config.TEMPORAL_PROFILE ?? 'default';
  const fromProfile = (field: string) => `${field} of profile "${profileName}" in ${fileName}`;
  const problems: string[] = [];
  let address = profile.address;
  const addressSource = config.TEMPORAL_ADDRESS !== undefined ? 'TEMPORAL_ADDRESS' : fromProfile('address');
  if (address !== undefined && !HostPort.safeParse(address).success) {
    problems.push(`${addressSource}: "${address}" must be host:port (e.g. temporal.example.com:7233)`);
    address = undefined;
  }
  const tls = profile.tls === undefined ? undefined : { ...profile.tls };
  if (tls && !tls.disabled) {
    for (const { field, setting, toml, kind } of PEM_FIELDS) {
      const source = tls[field];
      if (source === undefined) continue;
      const name =
        'path' in source
          ? config[`${setting}_PATH`] !== undefined
            ? `${setting}_PATH`
            : fromProfile(`tls.${toml}_path`)
          : config[`${setting}_DATA`] !== undefined
            ? `${setting}_DATA`
            : fromProfile(`tls.${toml}_data`);
      const read = pemOf(source, kind);
      if ('problem' in read) problems.push(`${name}: ${read.problem}`);
      else tls[field] = { data: read.data };
    }
    if ((tls.clientCert === undefined) !== (tls.clientKey === undefined))
      problems.push(
        tls.clientCert === undefined
          ? 'TEMPORAL_TLS_CLIENT_CERT_PATH (or _DATA): is required with a client key'
          : 'TEMPORAL_TLS_CLIENT_KEY_PATH (or _DATA): is required with a client certificate',
      );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const options = toClientOptions({ ...profile, ...(tls ? { tls } : {}) });
  const apiKey = profile.apiKey !== undefined ? new Secret(profile.apiKey) : undefined;
  const clientKey = tls?.clientKey && 'data' in tls.clientKey ? tls.clientKey.data : undefined;
  return {
    address,
    addressSource,
    namespace: options.namespace ?? 'default',
    apiKey,
    secrets: [
      ...(apiKey ? [apiKey] : []),
      ...(clientKey !== undefined
        ? [new Secret(typeof clientKey === 'string' ? clientKey : Buffer.from(clientKey).toString('latin1'))]
        : []),
    ],
    tls: options.connectionOptions.tls,
    metadata: options.connectionOptions.metadata,
  };
}

/** A PEM input read (from its file when it names one) and checked to be PEM of the expected kind. */
function pemOf(source: ConfigDataSource, kind: string): { data: Uint8Array } | { problem: string } {
  let data: Uint8Array;
  if ('path' in source) {
    try {
      data = readFileSync(source.path);
    } catch (err) {
      return {
        problem: `cannot read ${source.path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      };
    }
  } else data = typeof source.data === 'string' ? Buffer.from(source.data) : source.data;
  const text = Buffer.from(data).toString('latin1');
  const isKey = kind === 'a private key';
  const pem = isKey ? /-----BEGIN [A-Z ]*PRIVATE KEY-----/ : /-----BEGIN CERTIFICATE-----/;
  if (!pem.test(text))
    return {
      problem: `${'path' in source ? `${source.path} is` : 'is'} not ${kind} in PEM format (-----BEGIN ${isKey ? '… PRIVATE KEY' : 'CERTIFICATE'}-----)`,
    };
  return { data };
}

/**
 * The warning for an API key sent to Temporal without TLS (TEMPORAL_TLS=false, or a profile's tls disabled)
 * to another machine, or null. Not refused: a trusted network or a TLS-terminating proxy makes it
 * legitimate; but the key then crosses the network unencrypted, which is said at every start.
 */
export function plaintextApiKeyWarning(settings: TemporalConnectionSettings, address: string): string | null {
  if (settings.apiKey === undefined || settings.tls || isLoopbackUrl(`http://${address}`)) return null;
  return `TEMPORAL_API_KEY without TLS (TEMPORAL_TLS=false): the Temporal API key is sent unencrypted to ${address}, another machine`;
}

/** A connection to Temporal that could not be made: one line naming the address and where it came from. */
export class TemporalConnectionError extends Error {}

export interface TemporalConnections {
  readonly connection: NativeConnection;
  readonly client: Client;
  close(): Promise<void>;
}

/**
 * Opens the worker's (native) and the client's connection to `address` with the resolved TLS, API key and
 * metadata. A refused or failed connection (server down, TLS handshake refused, a certificate the server
 * rejects) is a TemporalConnectionError: one line, with the SDK's reason and never the API key.
 */
export async function connectTemporal(
  settings: TemporalConnectionSettings,
  address: string,
): Promise<TemporalConnections> {
  const common = {
    address,
    ...(settings.tls != null ? { tls: settings.tls } : {}),
    ...(settings.apiKey ? { apiKey: settings.apiKey.reveal() } : {}),
    ...(settings.metadata ? { metadata: settings.metadata } : {}),
  };
  const nativeOptions: NativeConnectionOptions = common;
  const clientOptions: ConnectionOptions = common;
  const opened: { close(): Promise<void> }[] = [];
  try {
    const connection = await NativeConnection.connect(nativeOptions);
    opened.push(connection);
    const clientConnection = await Connection.connect(clientOptions);
    opened.push(clientConnection);
    return {
      connection,
      client: new Client({ connection: clientConnection, namespace: settings.namespace }),
      async close() {
        await connection.close();
        await clientConnection.close();
      },
    };
  } catch (err) {
    for (const c of opened) await c.close().catch(() => undefined);
    const reason = (err as Error).message.split('\n').find((line) => line.trim() !== '') ?? String(err);
    const scrubbed = new Secrets(settings.secrets).scrub(reason);
    const how = settings.tls ? 'over TLS' : 'without TLS';
    throw new TemporalConnectionError(
      `cannot connect to Temporal at ${address} (${settings.address ? settings.addressSource : 'the default address'}, ${how}): ${scrubbed.trim()}`,
    );
  }
}
