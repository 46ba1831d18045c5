import { describe, expect, it } from 'vitest';
import { scrubEchoedSecrets } from '../../connectors/support-api/echoed-secrets.js';
import { Secret } from '../../schemas/secret.js';

const KEY = 'sk_live_SCRUBKEY_0123456789';
const key = new Secret(KEY);

describe('echoed secrets scrubbed from an answer before anything reads it', () => {
  it('from every string and member name, however deep, counted; `__proto__` stays a member', () => {
    let deep: unknown = `deep ${KEY}`;
    for (let i = 0; i < 20_000; i++) deep = [deep];
    const text = `{"data":[{"subject":"hi ${KEY}","x":1}],"k":"\\u0073k_live_SCRUBKEY_0123456789"}`;
    const json = JSON.parse(
      `{"data":[{"subject":"hi ${KEY}","${KEY}":{"n":"${KEY}"},"__proto__":"${KEY}","ok":"fine"}]}`,
    ) as { data: Record<string, unknown>[]; deep?: unknown };
    json.deep = deep;
    expect(scrubEchoedSecrets(json, text, key)).toBe(5);
    const item = json.data[0]!;
    expect(item['subject']).toBe('hi [redacted]');
    expect(item['[redacted]']).toEqual({ n: '[redacted]' });
    expect(Object.getPrototypeOf(item)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(item, '__proto__')?.value).toBe('[redacted]');
    expect(item['ok']).toBe('fine');
    expect(JSON.stringify(json.data)).not.toContain(KEY);
  });

  it('an answer that holds no secret is not walked', () => {
    const json = { data: [{ subject: 'hi' }] };
    expect(scrubEchoedSecrets(json, JSON.stringify(json), key)).toBe(0);
    // A key spelled with escapes in the body text is found in the decoded strings all the same.
    const spelled = '{"s":"\\u0073k_live_SCRUBKEY_0123456789"}';
    const decoded = JSON.parse(spelled) as { s: string };
    expect(scrubEchoedSecrets(decoded, spelled, key)).toBe(1);
    expect(decoded.s).toBe('[redacted]');
  });
});
