import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A proxy in front of the companion whose JSON answers a test can rewrite: a source that reads the spec's
 * open points another way, or misbehaves (repeats a cursor). It can also hold requests back until the test
 * lets them through (`gate`: a run kept going while the test looks at it). Everything else passes through
 * unchanged, headers included (the rate-limit headers the governor follows).
 */
export interface RewritingProxy {
  readonly url: string;
  target: string;
  rewrite: ((path: string, query: URLSearchParams, body: unknown) => unknown) | null;
  /** A request waits for the promise this returns before it is forwarded (null: it goes at once). */
  gate: ((method: string, path: string) => Promise<void> | null) | null;
  close(): Promise<void>;
}

export async function startRewritingProxy(): Promise<RewritingProxy> {
  const proxy: RewritingProxy = { url: '', target: '', rewrite: null, gate: null, close: async () => {} };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      try {
        const url = new URL(req.url ?? '/', proxy.target);
        await proxy.gate?.(req.method ?? 'GET', url.pathname.replace(/^\/public\/v1/, ''));
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(([k, v]) => typeof v === 'string' && k !== 'host'),
        ) as Record<string, string>;
        const upstream = await fetch(url, {
          method: req.method ?? 'GET',
          headers,
          ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
        });
        let text = await upstream.text();
        const rewrite = proxy.rewrite;
        if (rewrite && upstream.headers.get('content-type')?.includes('json')) {
          const path = url.pathname.replace(/^\/public\/v1/, '');
          text = JSON.stringify(rewrite(path, url.searchParams, JSON.parse(text)));
        }
        const out: Record<string, string> = {};
        upstream.headers.forEach((v, k) => {
          if (k !== 'content-length' && k !== 'content-encoding' && k !== 'transfer-encoding') out[k] = v;
        });
        res.writeHead(upstream.status, out).end(text);
      } catch (err) {
        res.writeHead(502, { 'content-type': 'text/plain' }).end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  Object.assign(proxy, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
  return proxy;
}
