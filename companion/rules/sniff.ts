import { fileTypeFromBuffer } from 'file-type';

/**
 * Whether the bytes really are of the declared type (spec 4.7: "checks the file's actual content, not only the
 * declared MIME type"). Binary formats are sniffed with `file-type` (magic numbers, and the ZIP directory for
 * .docx/.xlsx); plain text and CSV have no magic bytes, so they must be valid UTF-8 without binary control
 * characters, and CSV must have a consistent delimiter count on its first lines.
 */
export async function contentMatches(
  data: Buffer,
  declared: string,
): Promise<{ ok: boolean; detected: string }> {
  const detected = await fileTypeFromBuffer(data);
  if (declared === 'text/plain' || declared === 'text/csv') {
    if (detected) return { ok: false, detected: detected.mime };
    const text = decodeUtf8(data);
    if (text === null || hasBinaryControl(text)) return { ok: false, detected: 'application/octet-stream' };
    if (declared === 'text/csv' && !looksLikeCsv(text)) return { ok: false, detected: 'text/plain' };
    return { ok: true, detected: declared };
  }
  if (!detected) return { ok: false, detected: 'unknown' };
  return { ok: detected.mime === declared, detected: detected.mime };
}

function decodeUtf8(data: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch {
    return null;
  }
}

function looksLikeCsv(text: string): boolean {
  const lines = text
    .split(/\r?\n/)
    .filter((l) => l.length > 0)
    .slice(0, 20);
  if (lines.length === 0) return false;
  for (const delim of [',', ';', '\t']) {
    const counts = lines.map((l) => l.split(delim).length - 1);
    const first = counts[0] ?? 0;
    if (first > 0 && counts.every((c) => c === first)) return true;
  }
  return false;
}

function hasBinaryControl(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 9 || (c > 13 && c < 32)) return true;
  }
  return false;
}
