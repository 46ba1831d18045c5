import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The destination stays a small core: every member of `Destination` is one more thing each warehouse must
 * get right and the conformance suite must prove, so a new need is a capability, an option of a member, or
 * code in the module that owns it (connectors/queries/, custom-field-view.ts) before it is a member. And
 * warehouse reads outside the connectors go through the named queries, not `select` (the BI tie-out and
 * the forecast's read view excepted: their SQL is the point of them).
 */
const MAX_MEMBERS = 15;
const ROOT = join(import.meta.dirname, '..', '..');
const DESTINATION = join(ROOT, 'connectors', 'destination.ts');
const SELECT_ALLOWED = ['activities/tie-out/', 'forecast/warehouse-reads.ts'];
const PRODUCT_DIRS = ['activities', 'cli', 'forecast', 'worker', 'workflows', 'schemas', 'streams'];

/** The members of the `Destination` type as the compiler sees them (inherited ones included). */
function destinationMembers(): string[] {
  // The interfaces it extends are in the same file: nothing it imports is needed to list the members.
  const program = ts.createProgram([DESTINATION], { noEmit: true, noResolve: true, noLib: true, types: [] });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(DESTINATION)!;
  const symbol = checker.getSymbolAtLocation(source);
  const exported = checker.getExportsOfModule(symbol!).find((s) => s.name === 'Destination');
  const type = checker.getDeclaredTypeOfSymbol(exported!);
  return checker.getPropertiesOfType(type).map((p) => p.name);
}

function productFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? productFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe('the destination core', () => {
  it(`has at most ${MAX_MEMBERS} members beside its capabilities`, () => {
    const members = destinationMembers().filter((m) => m !== 'capabilities');
    expect(members).toContain('writeTables');
    expect(members.length, members.join(', ')).toBeLessThanOrEqual(MAX_MEMBERS);
  });

  it('is read with select only by the connectors, the BI tie-out and the forecast read view', () => {
    const offenders = PRODUCT_DIRS.flatMap((dir) => productFiles(join(ROOT, dir)))
      .map((file) => relative(ROOT, file))
      .filter((file) => !SELECT_ALLOWED.some((allowed) => file.startsWith(allowed)))
      .filter((file) => /\.select\(/.test(readFileSync(join(ROOT, file), 'utf8')));
    expect(offenders).toEqual([]);
  });
});
