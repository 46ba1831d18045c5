import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The floors above the ground floor: schemas/ may import none of them. */
const ABOVE = [
  'streams',
  'connectors',
  'activities',
  'workflows',
  'worker',
  'cli',
  'forecast',
  'companion',
  'embedded',
];
/**
 * The one edge left: the registry's derived names (StreamName, the table catalog, the inputs' enums) are
 * built from the stream definitions, so schemas/streams.ts still reads streams/registry.ts (and the
 * definition types). Every other file of schemas/ stays on the ground floor.
 */
const KNOWN = new Set([
  'schemas/streams.ts -> streams/define.ts',
  'schemas/streams.ts -> streams/registry.ts',
]);

function filesUnder(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** The project files a file imports (static, type-only and dynamic imports, re-exports). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)].map((m) => m[1]!);
  return specifiers.map((s) => relative(ROOT, resolve(dirname(join(ROOT, file)), s)).replace(/\.js$/, '.ts'));
}

describe('the ground floor', () => {
  it('schemas/ imports nothing from the floors above it', () => {
    const upward = filesUnder('schemas').flatMap((file) =>
      importsOf(file)
        .filter((target) => ABOVE.includes(target.split('/')[0]!))
        .map((target) => `${file} -> ${target}`),
    );
    expect(upward.filter((edge) => !KNOWN.has(edge))).toEqual([]);
  });

  it('sees an upward import where there is one', () => {
    expect(importsOf('schemas/streams.ts')).toContain('streams/registry.ts');
    expect(importsOf('streams/define.ts')).toContain('schemas/streams.ts');
  });
});
