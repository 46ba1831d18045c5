import type { ErrorCode } from '../../schemas/api/index.js';
import { Prng } from '../world/prng.js';

export type FaultKind = '5xx' | 'reset' | 'slow' | 'html';
export interface FaultOptions {
  rate: number;
  kinds: FaultKind[];
  slowMs?: number;
  /**
   * Permanent errors for chosen requests (tests of the on-call path: one window that fails): a request whose
   * path under /public/v1 equals `path` and whose query has every `query` entry gets this error envelope.
   */
  reject?: {
    path: string;
    query?: Record<string, string>;
    status: number;
    code: ErrorCode;
    message?: string;
  }[];
}

/**
 * Deterministic fault injection: the n-th API request of an instance gets the same decision for the same
 * seed, so a failing run can be reproduced.
 */
export class FaultInjector {
  #n = 0;
  constructor(private readonly seed: number) {}

  next(options: FaultOptions | undefined): FaultKind | null {
    const n = this.#n++;
    if (!options || options.rate <= 0 || options.kinds.length === 0) return null;
    const rng = new Prng(this.seed ^ 0xfa17, n);
    if (rng.next() >= options.rate) return null;
    return options.kinds[rng.u32() % options.kinds.length] ?? null;
  }
}

export const PROXY_ERROR_HTML =
  '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';
