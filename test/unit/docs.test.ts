import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConfigFromEnv } from '../../schemas/config.js';
import { CONFIG_DOCS_PATH, renderConfigDocs } from '../../scripts/config-docs.js';

/**
 * Docs that cannot rot: the generated configuration reference is current, every relative link and anchor of
 * the README, CONTRIBUTING.md and docs/ resolves (remark-validate-links, offline: `npm run check:links`), and
 * every command the README's "Quick start" and "Against a real workspace" show — and every `npm` command in a
 * shell block of docs/ — names an npm script that exists and flags its CLI command accepts.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
const scripts: Record<string, string> = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts;

/** The shell words of one command line: quotes removed, a trailing `# comment` dropped. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let quote: string | undefined;
  let inWord = false;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = undefined;
      else word += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (ch === '#' && !inWord) {
      break;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** The lines of the fenced shell blocks in `markdown`, each with where it is (file:line). */
function shellLines(markdown: string, file: string, firstLine = 1): { line: string; where: string }[] {
  const found: { line: string; where: string }[] = [];
  let inShell = false;
  let inFence = false;
  markdown.split('\n').forEach((text, i) => {
    const fence = /^\s*```(\w*)/.exec(text);
    if (fence) {
      if (inFence) inFence = inShell = false;
      else {
        inFence = true;
        inShell = ['sh', 'bash', 'shell', 'console'].includes(fence[1] ?? '');
      }
      return;
    }
    if (inShell && text.trim() !== '') found.push({ line: text.trim(), where: `${file}:${firstLine + i}` });
  });
  return found;
}

/** The text of a `## heading` section of the README, and the line it starts on. */
function readmeSection(readme: string, heading: string): { text: string; firstLine: number } {
  const lines = readme.split('\n');
  const start = lines.indexOf(`## ${heading}`);
  if (start < 0) throw new Error(`README.md has no "## ${heading}" section`);
  const end = lines.findIndex((l, i) => i > start && /^## /.test(l));
  return { text: lines.slice(start, end < 0 ? undefined : end).join('\n'), firstLine: start + 1 };
}

async function markdownFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.md')).map((e) => join(e.parentPath, e.name));
}

/** What a shown command asks for: the npm script, and for the CLI its command and the flags given. */
interface ShownCommand {
  where: string;
  script: string;
  cliCommand?: string;
  flags: string[];
}

function parseNpmCommand(words: string[], where: string): ShownCommand {
  // `npm start`, `npm test`, `npm run [--silent] <script> [-- args]`
  const rest = words.slice(1).filter((w) => w !== '--silent' && w !== '-s');
  const [verb, ...afterVerb] = rest;
  const script = verb === 'run' ? (afterVerb.shift() ?? '') : (verb ?? '');
  const separator = afterVerb.indexOf('--');
  const args = separator < 0 ? [] : afterVerb.slice(separator + 1);
  const cli = /^(?:tsx|node (?:--[a-z-]+=\S+ )*--import tsx) cli\/main\.ts(?: (.*))?$/.exec(
    scripts[script] ?? '',
  );
  if (!cli) return { where, script, flags: args.filter((a) => a.startsWith('--')) };
  const argv = [...(cli[1]?.split(' ') ?? []), ...args];
  return {
    where,
    script,
    cliCommand: argv.find((a) => !a.startsWith('-')) ?? '',
    flags: argv.filter((a) => a.startsWith('--')).map((a) => a.split('=')[0] ?? a),
  };
}

/** The commands and env names shown in the README's two sections and in docs/'s shell blocks. */
async function shownCommands(): Promise<{
  commands: ShownCommand[];
  exported: { name: string; where: string }[];
}> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const lines = ['Quick start', 'Against a real workspace'].flatMap((heading) => {
    const { text, firstLine } = readmeSection(readme, heading);
    return shellLines(text, 'README.md', firstLine);
  });
  for (const file of await markdownFiles(join(ROOT, 'docs')))
    lines.push(...shellLines(await readFile(file, 'utf8'), relative(ROOT, file)));
  const commands: ShownCommand[] = [];
  const exported: { name: string; where: string }[] = [];
  for (const { line, where } of lines) {
    const words = shellWords(line.replace(/^\$ /, ''));
    if (words[0] === 'export')
      for (const assignment of words.slice(1).filter((w) => /^[A-Z_][A-Z0-9_]*=/.test(w)))
        exported.push({ name: assignment.split('=')[0] ?? '', where });
    // `VAR=value npm …`: the assignments before the command are the environment, not the command.
    const command = words.slice(words.findIndex((w) => !/^[A-Z_][A-Z0-9_]*=/.test(w)));
    if (command[0] === 'npm') commands.push(parseNpmCommand(command, where));
  }
  return { commands, exported };
}

/** The long flags a CLI command's `--help` lists (commander's own text, so the definitions themselves). */
async function cliFlags(command: string): Promise<Set<string>> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'cli/main.ts', command, '--help'], {
    cwd: ROOT,
  });
  return new Set(stdout.match(/--[a-z][a-z0-9-]*/g) ?? []);
}

describe('docs that cannot rot', () => {
  it('docs/configuration.md is generated from schemas/config.ts and current (npm run docs:config)', async () => {
    const docs = await readFile(CONFIG_DOCS_PATH, 'utf8');
    expect(docs).toBe(renderConfigDocs());
    for (const name of Object.keys(ConfigFromEnv.shape)) expect(docs).toContain(`### ${name}\n`);
  });

  it('every relative link and #anchor in README.md, CONTRIBUTING.md, docs/ and bench/RESULTS.md resolves (npm run check:links)', async () => {
    const result = await run('npm', ['run', '--silent', 'check:links'], { cwd: ROOT }).then(
      () => ({ failed: false, report: '' }),
      (err: { stderr?: string; stdout?: string; message: string }) => ({
        failed: true,
        report: `${err.stderr ?? ''}${err.stdout ?? ''}` || err.message,
      }),
    );
    // The report (file:line, the missing file or heading) is the message when it fails.
    expect(result.report).toBe('');
    expect(result.failed).toBe(false);
  });

  it('every command the README and docs/ show exists with its flags', async () => {
    const { commands, exported } = await shownCommands();
    // The README's two sections show at least the main job, the tests, preflight and a sync.
    const shown = commands.map((c) => `${c.script} ${c.cliCommand ?? ''}`.trim());
    expect(shown).toEqual(expect.arrayContaining(['start start', 'test', 'cli preflight', 'sync sync']));

    const programHelp = (
      await run(process.execPath, ['--import', 'tsx', 'cli/main.ts', '--help'], { cwd: ROOT })
    ).stdout;
    const cliCommands = new Set([...programHelp.matchAll(/^ {2}([a-z][a-z-]*) /gm)].map((m) => m[1]));
    const problems: string[] = [];
    for (const c of commands) {
      if (scripts[c.script] === undefined)
        problems.push(`${c.where}: npm script "${c.script}" does not exist`);
      else if (c.cliCommand !== undefined && !cliCommands.has(c.cliCommand))
        problems.push(`${c.where}: the CLI has no command "${c.cliCommand}"`);
    }
    const wanted = [
      ...new Set(
        commands.flatMap((c) => (c.cliCommand && cliCommands.has(c.cliCommand) ? [c.cliCommand] : [])),
      ),
    ];
    const flagsOf = new Map(await Promise.all(wanted.map(async (w) => [w, await cliFlags(w)] as const)));
    for (const c of commands) {
      const accepted = c.cliCommand ? flagsOf.get(c.cliCommand) : undefined;
      for (const flag of c.flags) {
        if (accepted && !accepted.has(flag))
          problems.push(`${c.where}: "${c.cliCommand}" has no flag ${flag}`);
        if (!c.cliCommand && scripts[c.script] !== undefined)
          problems.push(
            `${c.where}: npm script "${c.script}" is not the CLI; its flag ${flag} cannot be checked`,
          );
      }
    }
    // What the README tells you to export is a setting the configuration knows.
    // Beside the schema's settings: the variables docs/configuration.md lists as read outside it, and the
    // package managers' own cache folders (a cold-cache measurement empties them).
    const outside = [
      ...readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8').matchAll(/^\| `([A-Z_]+)`/gm),
    ].map((m) => m[1]);
    const toolVariables = ['XDG_CACHE_HOME', 'PIP_CACHE_DIR', 'npm_config_cache'];
    const settings = new Set([...Object.keys(ConfigFromEnv.shape), ...outside, ...toolVariables]);
    for (const e of exported)
      if (!settings.has(e.name)) problems.push(`${e.where}: ${e.name} is not a setting of schemas/config.ts`);
    expect(problems).toEqual([]);
    // One `--help` per CLI command, each a node process loading the whole CLI: slow on a busy machine.
  }, 300_000);
});
