import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/**
 * The ground floor: schemas/ and the stream definitions (streams/: data and plain functions, from which the
 * registry's names, the table catalog and the inputs' enums derive). They import none of the floors above.
 */
const GROUND = ['schemas', 'streams'];
const ABOVE = ['connectors', 'activities', 'workflows', 'worker', 'cli', 'forecast', 'companion', 'embedded'];

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
  it('schemas/ and streams/ import nothing from the floors above them', () => {
    const upward = GROUND.flatMap(filesUnder).flatMap((file) =>
      importsOf(file)
        .filter((target) => ABOVE.includes(target.split('/')[0]!))
        .map((target) => `${file} -> ${target}`),
    );
    expect(upward).toEqual([]);
  });

  it('sees an upward import where there is one', () => {
    expect(importsOf('activities/fetchers.ts')).toContain('connectors/support-api/stream-pages.ts');
    expect(importsOf('streams/define.ts')).toContain('schemas/streams.ts');
  });
});
