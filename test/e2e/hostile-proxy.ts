import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does with one request: answer it itself (`misbehave` wrote the response) or forward it. */
export type Misbehaviour = (
  request: { method: string; path: string; query: URLSearchParams; n: number },
  res: ServerResponse,
) => boolean;

/**
 * What the proxy does to a forwarded JSON answer: the text to send instead (a field added, a cursor
 * poisoned …), or null to send it unchanged. Text, not a value: a hostile answer may be JSON that no
 * `JSON.stringify` would write (an item nested too deep to serialise recursively).
 */
export type Rewrite = (
  request: { method: string; path: string; query: URLSearchParams; n: number },
  body: unknown,
) => string | null;

/**
 * A proxy in front of the companion that answers chosen requests as a hostile server would (a drip, a
 * monstrous error, a redirect …), rewrites chosen forwarded answers, and forwards every other one unchanged,
 * headers included. `n` counts the requests of the same path so far (1 for the first).
 */
export interface HostileProxy {
  readonly url: string;
  misbehave: Misbehaviour | null;
  rewrite: Rewrite | null;
  close(): Promise<void>;
}

export async function startHostileProxy(target: string): Promise<HostileProxy> {
  const proxy: HostileProxy = { url: '', misbehave: null, rewrite: null, close: async () => {} };
  const requestsOfPath = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      try {
        const url = new URL(req.url ?? '/', target);
        const path = url.pathname.replace(/^\/public\/v1/, '');
        const n = (requestsOfPath.get(path) ?? 0) + 1;
        requestsOfPath.set(path, n);
        const request = { method: req.method ?? 'GET', path, query: url.searchParams, n };
        if (proxy.misbehave?.(request, res)) return;
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
        const body = Buffer.from(await upstream.arrayBuffer());
        const rewritten =
          proxy.rewrite && out['content-type']?.includes('json')
            ? proxy.rewrite(request, JSON.parse(body.toString('utf8')))
            : null;
        res.writeHead(upstream.status, out).end(rewritten ?? body);
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
