import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Paths that cannot go stale: every repo-relative path a comment of a .ts file or a Markdown page names
 * (prose, inline code, code blocks, HTML comments) exists. `npm run check:links` resolves Markdown links;
 * this covers the paths written as text. A path counts when it starts with one of the repository's top-level
 * folders and ends in a file extension or a `/` (an inline code span holding only a path counts without
 * either), so prose such as "tickets/threads" is never read as a path. It may also be written relative to
 * the file that names it (a README naming the files of its own folder).
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Folders and files that are not the project's sources (installed, built or written at run time). */
const NOT_SOURCES = new Set(['node_modules', '.git', 'dist', '.data', 'coverage', '.tmp']);

const TOP_FOLDERS = readdirSync(ROOT, { withFileTypes: true })
  .filter((e) => e.isDirectory() && !NOT_SOURCES.has(e.name))
  .map((e) => e.name);

const EXTENSIONS = 'ts|js|mjs|cjs|md|json|jsonl|ndjson|yml|yaml|sh|sql|svg|py|txt|toml|csv|conf|html';
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A run of path characters that starts at a top-level folder, not inside a longer path or a word. */
const PATH_RUN = new RegExp(`(?<![\\w./@~-])(?:${TOP_FOLDERS.map(escapeRe).join('|')})/[\\w./-]*`, 'g');
const WITH_EXTENSION = new RegExp(`\\.(?:${EXTENSIONS})$`);

interface NamedPath {
  path: string;
  /** 1-based line in the file that names it. */
  line: number;
}

/** The paths a piece of text names; `wholeSpan`: the text is one inline code span (a bare folder counts). */
function pathsIn(text: string, firstLine: number, wholeSpan = false): NamedPath[] {
  const found: NamedPath[] = [];
  for (const m of text.matchAll(PATH_RUN)) {
    const after = text[m.index + m[0].length];
    // A glob, a template or a placeholder names no one file.
    if (after !== undefined && '*{<$['.includes(after)) continue;
    // Sentence punctuation after the path is not part of it.
    const path = m[0].replace(/[.,;:)-]+$/, '');
    if (path.includes('..') || path.includes('//')) continue;
    const isWholeSpan = wholeSpan && path === text.trim();
    if (!WITH_EXTENSION.test(path) && !path.endsWith('/') && !isWholeSpan) continue;
    found.push({ path, line: firstLine + (text.slice(0, m.index).match(/\n/g)?.length ?? 0) });
  }
  return found;
}

/** The paths named in the comments of a TypeScript source (strings and code are not read). */
function pathsInTypeScriptComments(source: string): NamedPath[] {
  const file = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const ranges = new Map<number, ts.CommentRange>();
  const collect = (pos: number, end: number) => {
    for (const r of ts.getLeadingCommentRanges(source, pos) ?? []) ranges.set(r.pos, r);
    for (const r of ts.getTrailingCommentRanges(source, end) ?? []) ranges.set(r.pos, r);
  };
  const visit = (node: ts.Node) => {
    collect(node.pos, node.end);
    ts.forEachChild(node, visit);
  };
  visit(file);
  collect(file.endOfFileToken.pos, file.endOfFileToken.end);
  const lineOf = (pos: number) => file.getLineAndCharacterOfPosition(pos).line + 1;
  return [...ranges.values()].flatMap((r) => pathsIn(source.slice(r.pos, r.end), lineOf(r.pos)));
}

/** The paths a Markdown page names: in prose, inline code spans, code blocks and HTML comments. */
function pathsInMarkdown(markdown: string): NamedPath[] {
  const found: NamedPath[] = [];
  markdown.split('\n').forEach((text, i) => {
    const line = i + 1;
    for (const span of text.matchAll(/(`+)([^`]+)\1/g)) found.push(...pathsIn(span[2]!, line, true));
    found.push(...pathsIn(text.replace(/(`+)[^`]+\1/g, ' '), line));
  });
  return found;
}

/** Where a named path is missing: neither from the repository's root nor from the naming file's folder. */
function missingPaths(named: readonly NamedPath[], fileFolder: string): NamedPath[] {
  const exists = (path: string) =>
    [ROOT, fileFolder].some(
      (base) =>
        existsSync(join(base, path)) ||
        // A module named as an ESM import names it (by its .js) or without its extension.
        (path.endsWith('.js') && existsSync(join(base, `${path.slice(0, -3)}.ts`))) ||
        existsSync(join(base, `${path}.ts`)),
    );
  return named.filter((n) => !exists(n.path));
}

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((e) => {
    if (NOT_SOURCES.has(e.name)) return [];
    const path = join(folder, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return /\.(ts|md)$/.test(e.name) ? [path] : [];
  });
}

describe('paths named in comments and docs', () => {
  it('finds a path in a comment, not in a string or code, and reports it when it does not exist', () => {
    const source = [
      "const url = new URL('../docs/none.md', import.meta.url); // see docs/index.md",
      '/**',
      ' * From workflows/no-such-module.ts and streams/define.ts; not a glob test/unit/*.test.ts,',
      ' * nor prose as tickets/threads, nor a relative ../../scripts/x.ts.',
      ' */',
      "const where = 'schemas/nothing-here.ts';",
    ].join('\n');
    const named = pathsInTypeScriptComments(source);
    expect(named).toEqual([
      { path: 'docs/index.md', line: 1 },
      { path: 'workflows/no-such-module.ts', line: 3 },
      { path: 'streams/define.ts', line: 3 },
    ]);
    expect(missingPaths(named, ROOT)).toEqual([{ path: 'workflows/no-such-module.ts', line: 3 }]);
  });

  it('finds paths in Markdown prose, code spans and HTML comments, a bare folder only as a whole span', () => {
    const markdown = [
      'Run `npx tsx scripts/gone.ts --days 3` and read `test/support`, or test/support (prose).',
      '<!-- generated by scripts/also-gone.ts -->',
      'The folder docs/guides/ holds guides; `test/unit/**/*.test.ts` is a glob.',
    ].join('\n');
    const named = pathsInMarkdown(markdown);
    expect(named).toEqual([
      { path: 'scripts/gone.ts', line: 1 },
      { path: 'test/support', line: 1 },
      { path: 'scripts/also-gone.ts', line: 2 },
      { path: 'docs/guides/', line: 3 },
    ]);
    expect(missingPaths(named, ROOT).map((n) => n.path)).toEqual(['scripts/gone.ts', 'scripts/also-gone.ts']);
  });

  it('every path named in a .ts comment or a Markdown page exists', () => {
    const stale: string[] = [];
    for (const file of sourceFiles(ROOT)) {
      const text = readFileSync(file, 'utf8');
      // Parsing is the cost: a file that names no path at all is not parsed.
      if (text.search(PATH_RUN) < 0) continue;
      const named = file.endsWith('.md') ? pathsInMarkdown(text) : pathsInTypeScriptComments(text);
      for (const n of missingPaths(named, dirname(file)))
        stale.push(`${relative(ROOT, file)}:${n.line}: ${n.path}`);
    }
    expect(stale, 'paths named in comments or docs that do not exist').toEqual([]);
  });
});
