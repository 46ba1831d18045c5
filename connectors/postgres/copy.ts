import type { ColumnSpec, WarehouseRow } from '../../schemas/warehouse.js';

/*
 * COPY's text format: how a staged batch travels to PostgreSQL (pg-copy-streams), in chunks of lines.
 */

const NEEDS_ESCAPE = /[\\\n\r\t]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** Escapes a value for COPY's text format (backslash, newline, carriage return, tab). */
export function copyEscape(text: string): string {
  return NEEDS_ESCAPE.test(text) ? text.replace(/[\\\n\r\t]/g, (ch) => ESCAPES[ch]!) : text;
}

/** Renders one row as a COPY text-format line (`\N` for null, JSON for json columns). */
export function copyLine(columns: readonly ColumnSpec[], row: WarehouseRow): string {
  let line = '';
  for (let i = 0; i < columns.length; i++) {
    const c = columns[i]!;
    const v = row[c.name];
    if (i > 0) line += '\t';
    if (v === null || v === undefined) {
      line += '\\N';
      continue;
    }
    switch (c.type) {
      case 'json':
        line += copyEscape(JSON.stringify(v));
        break;
      case 'boolean':
        line += v ? 't' : 'f';
        break;
      case 'integer':
      case 'float':
        line += String(v);
        break;
      default:
        line += copyEscape(String(v));
    }
  }
  return `${line}\n`;
}

const COPY_CHUNK_ROWS = 500;

/** The rows as COPY text, a buffer of lines per chunk (a stream's worth, not the batch at once). */
export function* copyChunks(columns: readonly ColumnSpec[], rows: readonly WarehouseRow[]) {
  for (let i = 0; i < rows.length; i += COPY_CHUNK_ROWS) {
    let chunk = '';
    const end = Math.min(rows.length, i + COPY_CHUNK_ROWS);
    for (let j = i; j < end; j++) chunk += copyLine(columns, rows[j]!);
    yield Buffer.from(chunk, 'utf8');
  }
}
