#!/usr/bin/env node
// check-types fails when the committed declarations in types/ differ from what tsc generates
// from the JSDoc of src/ (run `npm run build:types` in clients/js and commit the result).

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'coachgw-types-'));
try {
  execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json'), '--outDir', tmp], { stdio: 'inherit' });
  const want = readdirSync(tmp).sort();
  const have = readdirSync(path.join(root, 'types')).sort();
  const stale = [...new Set([...want, ...have])].filter((f) => {
    try {
      return readFileSync(path.join(tmp, f), 'utf8') !== readFileSync(path.join(root, 'types', f), 'utf8');
    } catch {
      return true;
    }
  });
  if (stale.length > 0) {
    console.error(`types/ is stale (${stale.join(', ')}): run \`npm run build:types\` in clients/js and commit the result`);
    process.exit(1);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
