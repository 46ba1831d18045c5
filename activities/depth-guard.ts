import type { InvalidItem, Page } from '../connectors/support-api/index.js';
import { jsonCutAt, jsonDeeperThan, MAX_JSON_DEPTH } from '../schemas/warehouse.js';

/**
 * The JSON depth cap at the reader: an item nested deeper than the warehouse takes (MAX_JSON_DEPTH, in
 * schemas/warehouse/values.ts) is set aside like an item that breaks the spec — into `_rejected`, with the
 * reason — and the rest of its page is stored. Without it the row's build would fail on the depth (a stack
 * overflow, retried as transient), and the whole page with it, on every retry.
 */

/** Why an item is set aside for its depth (`_rejected.reason`). */
export const TOO_DEEP_REASON = `(item): JSON nested deeper than ${MAX_JSON_DEPTH} levels, more than the warehouse takes`;

/**
 * The page with its items nested past the cap moved to `rejected`, each kept cut at the cap (`jsonCutAt`),
 * at its index in the answer; items already rejected are cut likewise, so no walk of `_rejected`'s raw
 * JSON meets the depth either. The page itself when nothing is too deep.
 */
export function setAsideTooDeep<P extends Page<unknown, unknown>>(page: P): P {
  const deep = new Set<number>();
  page.rawItems.forEach((raw, i) => {
    if (jsonDeeperThan(raw)) deep.add(i);
  });
  const deepRejected = page.rejected.some((r) => jsonDeeperThan(r.raw));
  if (deep.size === 0 && !deepRejected) return page;
  const rejected: InvalidItem[] = page.rejected.map((r) =>
    jsonDeeperThan(r.raw) ? { ...r, raw: jsonCutAt(r.raw) } : r,
  );
  // The stored items fill, in order, the places in the answer that its rejected items leave.
  const taken = new Set(page.rejected.map((r) => r.index));
  const indexInAnswer: number[] = [];
  for (let n = 0; indexInAnswer.length < page.items.length; n++) if (!taken.has(n)) indexInAnswer.push(n);
  for (const i of deep) {
    const raw = page.rawItems[i]!;
    rejected.push({
      index: indexInAnswer[i]!,
      itemId: idOf(raw),
      raw: jsonCutAt(raw),
      reason: TOO_DEEP_REASON,
    });
  }
  rejected.sort((a, b) => a.index - b.index);
  return {
    ...page,
    items: page.items.filter((_, i) => !deep.has(i)),
    rawItems: page.rawItems.filter((_, i) => !deep.has(i)),
    rejected,
  };
}

function idOf(raw: Record<string, unknown>): string | undefined {
  const id = raw['id'];
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined;
}
