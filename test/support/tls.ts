import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http2, { type IncomingHttpHeaders } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';

/** PEM files of a certificate authority made for one test run, and certificates it signed. */
export interface TestPki {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A client certificate from another CA, which the proxy must refuse. */
  strangerCert: string;
  strangerKey: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function makeCa(dir: string, name: string): void {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
}

function makeSigned(dir: string, ca: string, name: string, extensions: string): void {
  openssl(dir, [
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    `/CN=${name}`,
  ]);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.pem`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-days',
    '2',
    '-out',
    `${name}.pem`,
    '-extfile',
    `${name}.ext`,
  ]);
}

/** A CA, a server certificate for localhost/127.0.0.1 and a client certificate, made with openssl. */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'support-sync-pki-'));
  makeCa(dir, 'ca');
  makeCa(dir, 'stranger-ca');
  makeSigned(dir, 'ca', 'server', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  makeSigned(dir, 'ca', 'client', 'extendedKeyUsage=clientAuth\n');
  makeSigned(dir, 'stranger-ca', 'stranger', 'extendedKeyUsage=clientAuth\n');
  const at = (file: string) => join(dir, file);
  return {
    dir,
    caCert: at('ca.pem'),
    serverCert: at('server.pem'),
    serverKey: at('server.key'),
    clientCert: at('client.pem'),
    clientKey: at('client.key'),
    strangerCert: at('stranger.pem'),
    strangerKey: at('stranger.key'),
  };
}

export interface Proxy {
  /** `127.0.0.1:<port>` */
  address: string;
  close(): Promise<void>;
}

async function listen(server: tls.Server | http2.Http2SecureServer): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as { port: number }).port}`;
}

function hostPort(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  return { host: address.slice(0, i), port: Number(address.slice(i + 1)) };
}

/**
 * A TLS terminator in front of a plaintext Temporal frontend, as a self-hosted cluster's mTLS ingress is: it
 * demands a client certificate signed by the test CA (any other, or none, ends the handshake), then pipes
 * the bytes through (gRPC's HTTP/2 needs nothing more than ALPN `h2`). `handshakes` counts the accepted ones,
 * `refused` the refused ones.
 */
export async function startMtlsProxy(pki: TestPki, upstream: string) {
  const sockets = new Set<Socket>();
  const stats = { handshakes: 0, refused: 0 };
  const server = tls.createServer(
    {
      key: readFileSync(pki.serverKey),
      cert: readFileSync(pki.serverCert),
      ca: readFileSync(pki.caCert),
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (client) => {
      stats.handshakes++;
      const target = connect(hostPort(upstream));
      sockets.add(client).add(target);
      client.pipe(target).pipe(client);
      const end = () => {
        client.destroy();
        target.destroy();
      };
      client.once('close', end).once('error', end);
      target.once('close', end).once('error', end);
    },
  );
  server.on('tlsClientError', () => stats.refused++);
  const address = await listen(server);
  return {
    address,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const HOP_BY_HOP = new Set([':scheme', ':authority', 'connection', 'host']);

/**
 * A TLS-terminating gRPC proxy (HTTP/2 streams forwarded one by one to a plaintext frontend) that records
 * every request's headers: where an API key must show up as `authorization: Bearer …`, the one thing the
 * dev server, which has no authentication, cannot check.
 */
export async function startRecordingGrpcProxy(pki: TestPki, upstream: string) {
  const headers: IncomingHttpHeaders[] = [];
  const session = http2.connect(`http://${upstream}`);
  session.on('error', () => undefined);
  const server = http2.createSecureServer({
    key: readFileSync(pki.serverKey),
    cert: readFileSync(pki.serverCert),
  });
  server.on('stream', (stream, requestHeaders) => {
    headers.push(requestHeaders);
    const forwarded = Object.fromEntries(Object.entries(requestHeaders).filter(([k]) => !HOP_BY_HOP.has(k)));
    const up = session.request(forwarded);
    stream.pipe(up);
    let trailers: http2.OutgoingHttpHeaders = {};
    up.on('response', (responseHeaders) => {
      // A trailers-only response (an error status at once) ends with its headers.
      if ('grpc-status' in responseHeaders) stream.respond(responseHeaders, { endStream: true });
      else stream.respond(responseHeaders, { waitForTrailers: true });
    });
    up.on('trailers', (t) => {
      trailers = t;
    });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    up.pipe(stream);
    up.on('error', () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    stream.on('error', () => up.close(http2.constants.NGHTTP2_CANCEL));
    stream.on('close', () => {
      if (!up.closed) up.close(http2.constants.NGHTTP2_CANCEL);
    });
  });
  const address = await listen(server);
  return {
    address,
    headers,
    close: async () => {
      session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
