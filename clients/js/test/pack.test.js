// The package as a user installs it: `npm pack`, the tarball installed into a scratch project in
// a temporary directory, which type-checks (tsc --strict against the packed declarations) and
// takes a turn against the real gateway through the installed modules.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { BASE, skip } from './gateway.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');

describe('the packed package', { skip }, () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'coachgw-pack-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  /** @param {string[]} args @param {string} cwd */
  const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_update_notifier: 'false' } });

  test('npm pack holds the modules, the declarations and the publish fields', () => {
    const [packed] = JSON.parse(run(npm, ['pack', '--json', '--pack-destination', dir], root));
    const files = packed.files.map((/** @type {{path: string}} */ f) => f.path).sort();
    for (const want of ['package.json', 'README.md', 'src/index.js', 'src/ai.js', 'src/vue.js', 'types/index.d.ts', 'types/ai.d.ts']) {
      assert.ok(files.includes(want), `${want} is not packed: ${files.join(' ')}`);
    }
    assert.deepEqual(files.filter((f) => !/^(src\/[a-z]+\.js|types\/[a-z]+\.d\.ts|package\.json|README\.md)$/.test(f)), [], 'only the modules, declarations, package.json and README');
  });

  test('installed from the tarball, it type-checks under --strict and takes a turn', () => {
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball, 'no tarball');
    const app = path.join(dir, 'app');
    execFileSync('mkdir', [app]);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module', dependencies: { '@coachgw/client': `file:../${tarball}` } }));
    run(npm, ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], app);
    writeFileSync(path.join(app, 'turn.ts'), `import { CoachClient, collectTurn, chatError } from '@coachgw/client';
import type { CoachAIResult, ToulminState, Session } from '@coachgw/client';
const client = new CoachClient({ baseURL: process.env.COACHGW_URL ?? '' });
const s = (await client.createSession({ contract: 'toulmin' })) as Session<ToulminState>;
const { text, result } = await collectTurn(client.streamTurn<CoachAIResult>(s.id, { message: 'Cities should ban private cars from their centres.' }));
const step: ToulminState['step'] = result.result.step;
chatError(new Error('{"error":"x","message":"y"}')).error satisfies string;
console.log(JSON.stringify({ text, step, version: result.session.version }));
`);
    writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, skipLibCheck: true, lib: ['es2022', 'dom'], types: [] },
      files: ['turn.ts', 'env.d.ts'],
    }));
    writeFileSync(path.join(app, 'env.d.ts'), 'declare const process: { env: Record<string, string | undefined> };\n');
    run(process.execPath, [tsc, '-p', 'tsconfig.json'], app);
    // The same code as plain JavaScript, run by node against the gateway.
    writeFileSync(path.join(app, 'turn.mjs'), `import { CoachClient, collectTurn } from '@coachgw/client';
const client = new CoachClient({ baseURL: process.env.COACHGW_URL });
const s = await client.createSession({ contract: 'toulmin' });
const { text, result } = await collectTurn(client.streamTurn(s.id, { message: 'Cities should ban private cars from their centres.' }));
console.log(JSON.stringify({ text, step: result.result.step, version: result.session.version }));
`);
    const out = JSON.parse(execFileSync(process.execPath, ['turn.mjs'], { cwd: app, encoding: 'utf8', env: { ...process.env, COACHGW_URL: BASE } }));
    assert.equal(out.step, 'claim');
    assert.equal(out.version, 2);
    assert.ok(out.text.length > 0);
  });
});
