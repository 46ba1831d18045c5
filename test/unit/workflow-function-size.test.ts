import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Workflow code stays readable one function at a time: a lane that grows past a screen is a lane whose
 * state no one can hold in their head, and the orchestration bugs hide there. Every function, method,
 * accessor, constructor and arrow in `workflows/**\/*.ts` is measured (first line to last, nested functions
 * included in the one around them) with the TypeScript parser, and none may be over MAX_LINES.
 */
const MAX_LINES = 80;
const ROOT = join(import.meta.dirname, '..', '..');
const WORKFLOWS = join(ROOT, 'workflows');

interface Measured {
  readonly where: string;
  readonly name: string;
  readonly lines: number;
}

function functionName(node: ts.Node, source: ts.SourceFile): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (named.name) return named.name.getText(source);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(source);
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText(source);
  if (parent && ts.isPropertyDeclaration(parent)) return parent.name.getText(source);
  return '(anonymous)';
}

/** Every function-like node of one file's text, with its length in lines. */
function measureFunctions(fileName: string, text: string): Measured[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: Measured[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && (node as ts.FunctionLikeDeclaration).body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      out.push({
        where: `${fileName}:${first + 1}`,
        name: functionName(node, source),
        lines: last - first + 1,
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

function workflowFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? workflowFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const tooLong = (measured: readonly Measured[]) =>
  measured.filter((m) => m.lines > MAX_LINES).map((m) => `${m.where} ${m.name}: ${m.lines} lines`);

describe(`no function in workflows/ is over ${MAX_LINES} lines`, () => {
  it('measures every kind of function, and flags a long one', () => {
    const body = Array.from({ length: MAX_LINES - 2 }, (_, i) => `  step(${i});`).join('\n');
    const long = `export function lane() {\n${body}\n  step(-1);\n}\n`; // MAX_LINES + 1 lines
    expect(tooLong(measureFunctions('long.ts', long))).toEqual([`long.ts:1 lane: ${MAX_LINES + 1} lines`]);
    const kinds = [
      'function f() {}',
      'const g = () => 1;',
      'const h = function () {};',
      'class C { constructor() {} m() {} get a() { return 1; } set a(v) {} }',
      'const o = { p() {}, q: () => {} };',
    ].join('\n');
    expect(measureFunctions('kinds.ts', kinds).map((m) => m.name)).toEqual([
      'f',
      'g',
      'h',
      'constructor',
      'm',
      'a',
      'a',
      'p',
      'q',
    ]);
  });

  it('holds for workflows/', () => {
    const files = workflowFiles(WORKFLOWS);
    expect(files.length).toBeGreaterThan(10);
    const measured = files.flatMap((f) => measureFunctions(relative(ROOT, f), readFileSync(f, 'utf8')));
    expect(measured.length).toBeGreaterThan(50);
    expect(tooLong(measured)).toEqual([]);
  });
});
