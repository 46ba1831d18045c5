import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does with one request: answer it itself (`misbehave` wrote the response) or forward it. */
export type Misbehaviour = (
  request: { method: string; path: string; query: URLSearchParams; n: number },
  res: ServerResponse,
) => boolean;

/**
 * A proxy in front of the companion that answers chosen requests as a hostile server would (a drip, a
 * monstrous error, a redirect …) and forwards every other one unchanged, headers included. `n` counts the
 * requests of the same path so far (1 for the first).
 */
export interface HostileProxy {
  readonly url: string;
  misbehave: Misbehaviour | null;
  close(): Promise<void>;
}

export async function startHostileProxy(target: string): Promise<HostileProxy> {
  const proxy: HostileProxy = { url: '', misbehave: null, close: async () => {} };
  const seen = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      try {
        const url = new URL(req.url ?? '/', target);
        const path = url.pathname.replace(/^\/public\/v1/, '');
        const n = (seen.get(path) ?? 0) + 1;
        seen.set(path, n);
        if (proxy.misbehave?.({ method: req.method ?? 'GET', path, query: url.searchParams, n }, res)) return;
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(([k, v]) => typeof v === 'string' && k !== 'host'),
        ) as Record<string, string>;
        const upstream = await fetch(url, {
          method: req.method ?? 'GET',
          headers,
          ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
        });
        const out: Record<string, string> = {};
        upstream.headers.forEach((v, k) => {
          if (k !== 'content-length' && k !== 'content-encoding' && k !== 'transfer-encoding') out[k] = v;
        });
        res.writeHead(upstream.status, out).end(Buffer.from(await upstream.arrayBuffer()));
      } catch (err) {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  Object.assign(proxy, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
  return proxy;
}

/** Headers now, then one byte every `everyMs` until the client goes away. */
export function drip(res: ServerResponse, everyMs: number): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{');
  const timer = setInterval(() => res.write(' '), everyMs);
  res.on('close', () => clearInterval(timer));
}
