import type { Page } from '../connectors/support-api/index.js';

/** Pairs each parsed item with the JSON object it came from (the warehouse keeps both). */
export function rowsOf<T, M>(page: Page<T, M>): { item: T; raw: Record<string, unknown> }[] {
  return page.items.map((item, index) => ({ item, raw: page.rawItems[index] ?? {} }));
}
