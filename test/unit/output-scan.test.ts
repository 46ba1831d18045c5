import { describe, expect, it } from 'vitest';
import { OutputScan } from '../e2e/cli-to-files.js';

describe('OutputScan (the hostile bench counts its output as it streams)', () => {
  it('counts needles across chunk boundaries once each, and ESC, BEL and lines', () => {
    const scan = new OutputScan({ key: 'sk_secret', clear: '\u001b[2J' });
    const text = 'a sk_secret b\nsk_sec|ret \u001b[2J\u0007\nsk_secretsk_secret\u001b|[2J';
    for (const part of text.split('|')) scan.feed(Buffer.from(part));
    expect(scan.found).toEqual({ key: 4, clear: 2 });
    expect({ escapes: scan.escapes, bells: scan.bells, lines: scan.lines }).toEqual({
      escapes: 2,
      bells: 1,
      lines: 2,
    });
    expect(scan.bytes).toBe(Buffer.byteLength(text.replaceAll('|', '')));
  });

  it('splitting one byte at a time finds the same', () => {
    const text = 'xx sk_secret yy sk_secret';
    const scan = new OutputScan({ key: 'sk_secret' });
    for (const byte of Buffer.from(text)) scan.feed(Buffer.from([byte]));
    expect(scan.found.key).toBe(2);
  });
});
