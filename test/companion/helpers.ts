import { request } from 'undici';
import { type CompanionHandle, type CompanionOptions, startCompanion } from '../../companion/index.js';

export interface ApiResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are inspected field by field
  body: any;
}

export async function start(options: CompanionOptions = {}): Promise<CompanionHandle> {
  return startCompanion({ rateLimits: false, ...options });
}

export async function api(
  h: Pick<CompanionHandle, 'baseUrl' | 'keys'>,
  method: string,
  path: string,
  opts: {
    key?: string | null;
    query?: Record<string, string | number>;
    body?: unknown;
    headers?: Record<string, string>;
  } = {},
): Promise<ApiResult> {
  const url = new URL(`${h.baseUrl}/public/v1${path}`);
  for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, String(v));
  const headers: Record<string, string> = { ...opts.headers };
  const key = opts.key === undefined ? h.keys.admin : opts.key;
  if (key !== null) headers['cx-api-key'] = key;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await request(url, {
    method: method as 'GET',
    headers,
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
  });
  const text = await res.body.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.statusCode, headers: res.headers, body };
}
