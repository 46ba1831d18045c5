import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigFromEnv } from '../../schemas/config.js';
import { CONFIG_DOCS_PATH } from '../../scripts/config-docs.js';

/**
 * docs/configuration.md states every default the schema applies, including those of settings whose value is
 * transformed (a URL checked), whose JSON Schema carries no default: the page said "none" for
 * TEMPORAL_UI_URL while links defaulted to http://localhost:8233.
 */
describe('docs/configuration.md defaults', () => {
  it('names the default of every setting that has one', () => {
    const page = readFileSync(CONFIG_DOCS_PATH, 'utf8');
    const withDefault = Object.entries(ConfigFromEnv.shape).filter(([, s]) => s instanceof z.ZodDefault);
    expect(withDefault.map(([name]) => name)).toContain('TEMPORAL_UI_URL');
    for (const [name, setting] of withDefault) {
      const section = page.slice(page.indexOf(`### ${name}\n`)).split('\n### ')[0]!;
      const value = (setting as z.ZodDefault).def.defaultValue;
      expect(section, name).toContain(`- Default: \`${String(value)}\``);
    }
  });
});
