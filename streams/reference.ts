import type { z } from 'zod';
import type { StreamTable } from '../schemas/warehouse/table-spec.js';

/**
 * The table of a reference stream: a small list the sync reads whole on every run. The source gives no
 * version, so the latest read wins when the content differs, and a full refresh marks what the source
 * stopped serving.
 */
export function referenceTable<T extends z.ZodObject>(def: {
  readonly description: string;
  readonly schema: T;
  readonly descriptions: Readonly<Record<string, string>>;
  readonly indexes?: StreamTable<T>['indexes'];
  readonly clusterBy?: StreamTable<T>['clusterBy'];
}): StreamTable<T> {
  return {
    description: def.description,
    schema: def.schema,
    primaryKey: ['id'],
    merge: { kind: 'content' },
    tracksDeletion: true,
    derive: { descriptions: def.descriptions },
    indexes: def.indexes ?? [],
    partitionBy: null,
    clusterBy: def.clusterBy ?? [],
  };
}
