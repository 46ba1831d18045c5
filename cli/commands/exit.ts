/** Flushes stdout/stderr, then exits with the command's code. */
export async function exitWith(code: number): Promise<never> {
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
  process.exit(code);
}
