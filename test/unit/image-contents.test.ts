import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseDependencyTree } from 'dpdm';
import { describe, expect, it } from 'vitest';
import { DATA_DIR } from '../../embedded/data-dir.js';
import { devOnly } from '../../embedded/temporal.js';

/**
 * What the worker image holds (no Docker engine runs here, so the Dockerfile is read, not built): the
 * compiled code minus the demo's own modules, which the CLI must never import statically (it would fail to
 * start in the image); a base image named by one argument; a health check on the port the default command
 * serves; a build context without the demo's data and password file.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
/** The Dockerfile's instructions, continuation lines joined. */
const instructions = dockerfile
  .replace(/\\\n\s*/g, ' ')
  .split('\n')
  .filter((line) => line.trim() && !line.trim().startsWith('#'));
const stageOf = (name: string) => {
  const start = instructions.findIndex((l) => new RegExp(`^FROM \\S+ AS ${name}$`, 'i').test(l));
  if (start < 0) throw new Error(`no stage ${name}`);
  const end = instructions.findIndex((l, i) => i > start && l.startsWith('FROM '));
  return instructions.slice(start + 1, end < 0 ? undefined : end);
};

/** The source files (relative to the repository) whose compiled form the production-files stage removes. */
function removedFrom(sourceFiles: string[]): string[] {
  const removed = stageOf('production-files')
    .filter((l) => l.startsWith('RUN rm '))
    .flatMap((l) => l.split(/\s+/).filter((w) => w.startsWith('dist/')));
  expect(removed.length).toBeGreaterThan(0);
  const matchers = removed.map((pattern) => {
    const glob = pattern.slice('dist/'.length);
    return glob.endsWith('.*')
      ? (file: string) => file.startsWith(glob.slice(0, -1))
      : (file: string) => file === glob || file.startsWith(`${glob}/`);
  });
  return sourceFiles.filter((file) => matchers.some((m) => m(file)));
}

describe('the worker image', () => {
  it('leaves out the demo source and the embedded dev server, and nothing the CLI imports at start', async () => {
    // cli/main.ts turns on the compile cache and imports cli/program.ts, the command line: its static tree
    // is what the CLI loads at start.
    expect(readFileSync(join(ROOT, 'cli/main.ts'), 'utf8')).toContain("await import('./program.js')");
    const tree = await parseDependencyTree('cli/program.ts', {
      context: ROOT,
      cwd: ROOT,
      transform: true,
      skipDynamicImports: true,
    });
    const statically = Object.keys(tree);
    expect(statically).toContain('cli/commands/worker.ts');
    expect(removedFrom(statically)).toEqual([]);
    expect(removedFrom(['companion/index.ts', 'companion/http/app.ts'])).toHaveLength(2);
    expect(removedFrom(['embedded/temporal-server.ts', 'embedded/temporal-cli.ts'])).toHaveLength(2);
    // The runtime stage takes dist from the pruned stage, not from the build.
    expect(instructions.filter((l) => l.includes('--from=build'))).toEqual([]);
    expect(instructions).toContain('COPY --from=production-files /app/dist ./dist');
  }, 60_000);

  it('a demo module the image leaves out is named in one line, with the setting to use instead', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'image-contents-'));
    try {
      const missing = pathToFileURL(join(folder, 'dist', 'companion', 'index.js')).href;
      await expect(
        devOnly(
          () => import(missing),
          { module: 'companion/index.js' },
          'the demo source',
          'SUPPORT_API_URL',
        ),
      ).rejects.toThrow(
        /^the demo source is not part of this installation \(the worker image ships the production code only\); set SUPPORT_API_URL$/,
      );
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('names its base image once, by an argument that a digest can pin', () => {
    const from = instructions.filter((l) => l.startsWith('FROM '));
    expect(from.filter((l) => !/^FROM \$\{NODE_IMAGE\}/.test(l) && !/^FROM build AS /.test(l))).toEqual([]);
    const arg = instructions.filter((l) => l.startsWith('ARG NODE_IMAGE='));
    expect(arg).toHaveLength(1);
    // A tag, or a tag pinned by a whole sha256 digest: never a partial or made-up form.
    expect(arg[0]).toMatch(/^ARG NODE_IMAGE=node:[\w.-]+(@sha256:[0-9a-f]{64})?$/);
  });

  it('checks its health on the port its default command serves', () => {
    const cmd = JSON.parse(instructions.find((l) => l.startsWith('CMD '))!.slice(4)) as string[];
    const port = cmd[cmd.indexOf('--metrics-port') + 1];
    expect(cmd[0]).toBe('worker');
    const health = instructions.find((l) => l.startsWith('HEALTHCHECK '));
    expect(health).toContain(`http://127.0.0.1:${port}/healthz`);
  });

  it('keeps the demo data (with its password file), local settings and keys out of the build context', () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'));
    expect(relative(ROOT, DATA_DIR)).toBe('.data');
    for (const pattern of ['**/.data', '.env', '.env.*', '*.key', '*.pem', '.git', 'node_modules'])
      expect(ignored).toContain(pattern);
  });
});
