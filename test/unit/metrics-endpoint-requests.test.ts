import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The metrics and probe server faces the cluster network (the Kubernetes example binds it to 0.0.0.0): no
 * request may stop it. It runs in a process of its own (test/support/metrics-server.ts), as in a worker, so an
 * exception escaping its handler ends that process and the test sees it. Requests go over raw TCP, so the
 * request line is exactly what a hostile client sends (fetch would normalise or refuse it first).
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
let server: ChildProcess;
let port: number;
let stderr = '';

beforeAll(async () => {
  server = spawn(process.execPath, ['--import', 'tsx', 'test/support/metrics-server.ts'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const url = await new Promise<string>((resolve, reject) => {
    server.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
    server.once('exit', (code) => reject(new Error(`the metrics server exited (${code}): ${stderr}`)));
  });
  port = Number(new URL(url).port);
}, 60_000);
afterAll(() => {
  server.kill('SIGKILL');
});

/** Sends `bytes` as they are and returns what the server answered before closing (at most 2 s). */
function raw(bytes: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.setTimeout(2000, () => socket.destroy());
    socket.on('data', (d: Buffer) => {
      answer += d.toString('latin1');
    });
    socket.on('error', (err: NodeJS.ErrnoException) =>
      // The server may reset a connection it refuses; that is an answer too.
      err.code === 'ECONNRESET' ? resolve(answer) : reject(err),
    );
    socket.on('close', () => resolve(answer));
    socket.end(bytes);
  });
}

const statusOf = (answer: string) => /^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1];

async function stillHealthy(): Promise<void> {
  expect(server.exitCode, `the metrics server exited: ${stderr}`).toBeNull();
  expect(statusOf(await raw('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'))).toBe('200');
}

describe('the metrics server under malformed requests', () => {
  it('answers a request target no URL parser takes with 400, and keeps serving', async () => {
    const answer = await raw('GET http://a:b:c/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(statusOf(answer)).toBe('400');
    expect(answer).toContain('bad request: the request target is not a path');
    await stillHealthy();
  });

  it('serves an absolute-form target by its path', async () => {
    const answer = await raw(
      'GET http://worker:9464/readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    expect(statusOf(answer)).toBe('200');
  });

  it('survives random request lines, headers and bytes (fast-check)', async () => {
    const token = fc.stringMatching(/^[!-~]{0,40}$/);
    const target = fc.oneof(
      token,
      fc.tuple(fc.constantFrom('http://', 'https://', '//', '/', ''), token, token).map((p) => p.join('')),
      fc.string({ unit: 'binary', maxLength: 60 }),
    );
    const requestLine = fc
      .tuple(
        fc.constantFrom('GET', 'POST', 'HEAD', 'OPTIONS', 'G\u00e9T', ''),
        target,
        fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/9', ''),
      )
      .map(([method, t, version]) => `${method} ${t} ${version}`);
    const request = fc.oneof(
      requestLine.map((line) => `${line}\r\nHost: x\r\nConnection: close\r\n\r\n`),
      fc
        .tuple(requestLine, fc.string({ unit: 'binary', maxLength: 200 }))
        .map(([line, rest]) => `${line}\r\n${rest}\r\n\r\n`),
      fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
    );
    await fc.assert(
      fc.asyncProperty(request, async (bytes) => {
        await raw(bytes);
        await stillHealthy();
      }),
      { numRuns: 300 },
    );
  });
});
