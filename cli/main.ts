#!/usr/bin/env node
/**
 * The `support-sync` executable: the command line is cli/program.ts. This file only turns on Node's module
 * compile cache before the program's modules load (V8's compiled code kept on disk between runs: a short
 * command starts faster the second time). Node 20 has no compile cache and runs without it.
 */
import module from 'node:module';

(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
await import('./program.js');
