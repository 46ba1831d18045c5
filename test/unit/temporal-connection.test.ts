import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { Secrets } from '../../schemas/secret.js';
import { ConfigError, loadConfig } from '../../worker/config.js';
import { createLogger } from '../../worker/logger.js';
import { plaintextApiKeyWarning, resolveTemporalConnection } from '../../worker/temporal-connection.js';

/**
 * The Temporal connection settings as the SDK's environment configuration resolves them (profile file, then
 * every TEMPORAL_* setting over it), and the problems that must be one line naming the setting.
 */
const BASE = { SUPPORT_API_URL: 'http://127.0.0.1:1', SUPPORT_API_KEY: 'k', DESTINATION_URL: 'postgres://x' };
const NO_HOME = { HOME: '/nonexistent-home' };
const dir = mkdtempSync(join(tmpdir(), 'temporal-connection-'));
// Not a real certificate: only its PEM framing is checked before the connection is made.
const PEM_CERT = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const PEM_KEY = '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';
writeFileSync(join(dir, 'client.pem'), PEM_CERT);
writeFileSync(join(dir, 'client.key'), PEM_KEY);
writeFileSync(join(dir, 'notes.txt'), 'hello');

function resolve(env: Record<string, string>) {
  return resolveTemporalConnection(loadConfig({ ...BASE, ...env }), { ...NO_HOME, ...env });
}

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('Temporal connection settings', () => {
  it('nothing configured: no address (embedded or default), namespace default, no TLS', () => {
    const settings = resolve({});
    expect(settings.address).toBeUndefined();
    expect(settings.namespace).toBe('default');
    expect(settings.tls).toBeUndefined();
    expect(settings.apiKey).toBeUndefined();
  });

  it('TEMPORAL_ADDRESS must be host:port', () => {
    expect(problemsOf(() => loadConfig({ ...BASE, TEMPORAL_ADDRESS: 'http://temporal:7233' }))).toEqual([
      'TEMPORAL_ADDRESS: must be host:port (e.g. temporal.example.com:7233)',
    ]);
    expect(problemsOf(() => loadConfig({ ...BASE, TEMPORAL_ADDRESS: 'temporal' }))).toHaveLength(1);
    expect(problemsOf(() => loadConfig({ ...BASE, TEMPORAL_ADDRESS: 'temporal:99999' }))).toHaveLength(1);
    expect(resolve({ TEMPORAL_ADDRESS: '[::1]:7233' }).address).toBe('[::1]:7233');
  });

  it('an API key turns TLS on and is a Secret that no log or JSON shows', () => {
    const settings = resolve({
      TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      TEMPORAL_API_KEY: 'key-123-secret',
    });
    expect(settings.tls).toBe(true);
    expect(settings.apiKey?.reveal()).toBe('key-123-secret');
    expect(JSON.stringify(settings)).not.toContain('key-123-secret');
    expect(inspect(settings, { depth: 5 })).not.toContain('key-123-secret');
    expect(resolve({ TEMPORAL_API_KEY: 'k2', TEMPORAL_TLS: 'false' }).tls).toBe(false);
  });

  it('an API key without TLS to another machine is warned of at start (not refused: a TLS proxy may take it)', () => {
    const remote = { TEMPORAL_ADDRESS: 'temporal.example.com:7233', TEMPORAL_API_KEY: 'key-123-secret' };
    const warning = plaintextApiKeyWarning(
      resolve({ ...remote, TEMPORAL_TLS: 'false' }),
      remote.TEMPORAL_ADDRESS,
    );
    expect(warning).toBe(
      'TEMPORAL_API_KEY without TLS (TEMPORAL_TLS=false): the Temporal API key is sent unencrypted to temporal.example.com:7233, another machine',
    );
    expect(warning).not.toContain('key-123-secret');
    expect(plaintextApiKeyWarning(resolve(remote), remote.TEMPORAL_ADDRESS)).toBeNull();
    for (const address of ['localhost:7233', '127.0.0.1:7233', '[::1]:7233'])
      expect(
        plaintextApiKeyWarning(
          resolve({ ...remote, TEMPORAL_ADDRESS: address, TEMPORAL_TLS: 'false' }),
          address,
        ),
      ).toBeNull();
    const keyless = resolve({ TEMPORAL_ADDRESS: remote.TEMPORAL_ADDRESS, TEMPORAL_TLS: 'false' });
    expect(plaintextApiKeyWarning(keyless, remote.TEMPORAL_ADDRESS)).toBeNull();
  });

  it('mTLS from files: the certificate and key are read, the server name and CA passed on', () => {
    const settings = resolve({
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_TLS_CLIENT_CERT_PATH: join(dir, 'client.pem'),
      TEMPORAL_TLS_CLIENT_KEY_PATH: join(dir, 'client.key'),
      TEMPORAL_TLS_SERVER_CA_CERT_DATA: PEM_CERT,
      TEMPORAL_TLS_SERVER_NAME: 'frontend.temporal.internal',
    });
    expect(settings.tls).toMatchObject({
      serverNameOverride: 'frontend.temporal.internal',
      clientCertPair: { crt: expect.anything(), key: expect.anything() },
    });
    const tls = settings.tls as { clientCertPair: { crt: Uint8Array }; serverRootCACertificate: Uint8Array };
    expect(Buffer.from(tls.clientCertPair.crt).toString()).toBe(PEM_CERT);
    expect(Buffer.from(tls.serverRootCACertificate).toString()).toBe(PEM_CERT);
  });

  it('a missing, unreadable or non-PEM certificate is one problem naming its setting', () => {
    expect(
      problemsOf(() =>
        resolve({
          TEMPORAL_TLS_CLIENT_CERT_PATH: join(dir, 'missing.pem'),
          TEMPORAL_TLS_CLIENT_KEY_PATH: join(dir, 'client.key'),
        }),
      ),
    ).toEqual([`TEMPORAL_TLS_CLIENT_CERT_PATH: cannot read ${join(dir, 'missing.pem')} (ENOENT)`]);
    expect(problemsOf(() => resolve({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: join(dir, 'notes.txt') }))).toEqual([
      `TEMPORAL_TLS_SERVER_CA_CERT_PATH: ${join(dir, 'notes.txt')} is not a certificate in PEM format (-----BEGIN CERTIFICATE-----)`,
    ]);
    expect(problemsOf(() => resolve({ TEMPORAL_TLS_CLIENT_CERT_PATH: join(dir, 'client.pem') }))).toEqual([
      'TEMPORAL_TLS_CLIENT_KEY_PATH (or _DATA): is required with a client certificate',
    ]);
  });

  it('a key given as data is checked without echoing it', () => {
    const problems = problemsOf(() =>
      resolve({
        TEMPORAL_TLS_CLIENT_CERT_PATH: join(dir, 'client.pem'),
        TEMPORAL_TLS_CLIENT_KEY_DATA: 'not-a-key-but-secret',
      }),
    );
    expect(problems).toEqual([
      'TEMPORAL_TLS_CLIENT_KEY_DATA: is not a private key in PEM format (-----BEGIN … PRIVATE KEY-----)',
    ]);
  });

  it('profiles: TEMPORAL_PROFILE of TEMPORAL_CONFIG_FILE, each TEMPORAL_* setting overriding its field', () => {
    const file = join(dir, 'temporal.toml');
    writeFileSync(
      file,
      `[profile.default]
address = "localhost:7233"

[profile.prod]
address = "prod.tmprl.cloud:7233"
namespace = "prod.acct"
api_key = "profile-key"

[profile.prod.tls]
server_name = "prod.tmprl.cloud"
`,
    );
    const prod = resolve({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' });
    expect(prod).toMatchObject({ address: 'prod.tmprl.cloud:7233', namespace: 'prod.acct' });
    expect(prod.addressSource).toBe(`address of profile "prod" in ${file}`);
    expect(prod.apiKey?.reveal()).toBe('profile-key');
    // The profile's key is among the secrets the process's logger scrubs (embedded/temporal.ts adds them).
    expect(prod.secrets.map((secret) => secret.reveal())).toEqual(['profile-key']);
    const lines: string[] = [];
    const secrets = new Secrets();
    const log = createLogger('info', secrets, { write: (l: string) => lines.push(l) });
    for (const secret of prod.secrets) secrets.add(secret);
    log.error(new Error('UNAUTHENTICATED: api key profile-key refused'));
    expect(lines.join('')).not.toContain('profile-key');
    expect(prod.tls).toMatchObject({ serverNameOverride: 'prod.tmprl.cloud' });
    const overridden = resolve({
      TEMPORAL_CONFIG_FILE: file,
      TEMPORAL_PROFILE: 'prod',
      TEMPORAL_ADDRESS: 'other:7233',
      TEMPORAL_NAMESPACE: 'other',
    });
    expect(overridden).toMatchObject({
      address: 'other:7233',
      namespace: 'other',
      addressSource: 'TEMPORAL_ADDRESS',
    });
    expect(resolve({ TEMPORAL_CONFIG_FILE: file }).address).toBe('localhost:7233');
    expect(problemsOf(() => resolve({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'staging' }))).toEqual([
      `TEMPORAL_PROFILE: no profile "staging" in ${file}`,
    ]);
    expect(problemsOf(() => resolve({ TEMPORAL_CONFIG_FILE: join(dir, 'none.toml') }))).toEqual([
      `TEMPORAL_CONFIG_FILE: cannot read ${join(dir, 'none.toml')} (ENOENT)`,
    ]);
    writeFileSync(join(dir, 'bad.toml'), '[profile.default\naddress=');
    const bad = problemsOf(() => resolve({ TEMPORAL_CONFIG_FILE: join(dir, 'bad.toml') }));
    expect(bad).toHaveLength(1);
    expect(bad[0]).toMatch(/^TEMPORAL_CONFIG_FILE \(.*bad\.toml\): /);
  });
});
