// How `npm start` hands out the local secrets (the orep token, the demo OAuth client's secret):
// printed only to a terminal, where a person reads them; anywhere else (CI, a supervisor, a log
// file, `npm start | tee`) they go to a file only its owner can read, and the output names it.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The lines to print. `secrets`: [label, env name, value] each; `tty`: whether stdout is a
 * terminal; `file`: where they are written otherwise (mode 0600, replaced whole).
 */
export function secretLines(secrets, { tty, file }) {
  if (tty) return secrets.map(([label, , value]) => `  ${label.padEnd(15)} ${value}`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, secrets.map(([, name, value]) => `${name}=${value}\n`).join(''), { mode: 0o600 });
  // The mode above applies only when the file is created; an older one may have been readable.
  chmodSync(file, 0o600);
  return [`  secrets         ${file} (${secrets.map(([label]) => label).join(', ')}; mode 0600: stdout is not a terminal, so they are not printed)`];
}
