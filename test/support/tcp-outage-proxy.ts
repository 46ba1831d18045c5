import { createConnection, createServer, type Socket } from 'node:net';

/** What the proxy does with connections while the service is "down". */
export type TcpOutage = 'reset' | 'silent' | null;

export interface TcpOutageProxy {
  /** host:port to connect to instead of the target. */
  readonly endpoint: string;
  /** Connections the outage broke: reset, or held without an answer (open ones and new ones). */
  interrupted(): number;
  stop(): Promise<void>;
}

/**
 * A TCP proxy in front of a service (here the emulator's gRPC port: the Storage Write API) that can make it
 * go away the way a network outage does. While `outage()` says:
 *  - `reset`: every open connection is reset, and every new one is reset on arrival (connection refused);
 *  - `silent`: nothing passes on open connections any more, and new ones are accepted and never answered
 *    (a black hole);
 *  - null: bytes pass both ways.
 * The proxy checks the outage on every connection and every 100 ms, so an outage breaks a long-lived
 * stream (HTTP/2) at once, as the real one would.
 */
export async function startTcpOutageProxy(target: string, outage: () => TcpOutage): Promise<TcpOutageProxy> {
  const i = target.lastIndexOf(':');
  const [host, port] = [target.slice(0, i), Number(target.slice(i + 1))];
  const open = new Set<{ client: Socket; upstream: Socket }>();
  const held = new Set<Socket>();
  let interrupted = 0;
  const server = createServer((client) => {
    client.on('error', () => undefined);
    const now = outage();
    if (now !== null) interrupted += 1;
    if (now === 'reset') return void client.resetAndDestroy();
    if (now === 'silent') {
      held.add(client);
      client.once('close', () => held.delete(client));
      return;
    }
    const upstream = createConnection({ host, port });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    const pair = { client, upstream };
    open.add(pair);
    const drop = () => {
      if (!open.delete(pair)) return; // gone quiet: held until the network is back
      client.destroy();
      upstream.destroy();
    };
    client.once('close', drop);
    upstream.once('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  let last: TcpOutage = null;
  const watch = setInterval(() => {
    const now = outage();
    if (now !== null && now !== last) {
      // The outage begins (or changes): what was open is reset, or goes quiet (nothing passes any more).
      for (const { client, upstream } of open) {
        interrupted += 1;
        if (now === 'reset') {
          client.resetAndDestroy();
          upstream.destroy();
        } else {
          client.unpipe(upstream);
          upstream.unpipe(client);
          client.pause();
          upstream.destroy();
          held.add(client);
          client.once('close', () => held.delete(client));
        }
      }
      open.clear();
    }
    // The network is back: what went quiet is found dead (the peer's own timeouts drop such connections).
    if (now === null && last === 'silent') for (const s of held) s.resetAndDestroy();
    last = now;
  }, 100);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('tcp outage proxy: no port');
  return {
    endpoint: `127.0.0.1:${address.port}`,
    interrupted: () => interrupted,
    async stop() {
      clearInterval(watch);
      for (const { client, upstream } of open) {
        client.destroy();
        upstream.destroy();
      }
      for (const s of held) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
