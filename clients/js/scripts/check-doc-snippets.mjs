#!/usr/bin/env node
// check-doc-snippets compiles every TypeScript snippet of the repository's Markdown (```ts and
// ```typescript fences in the README, docs/ and the packages' READMEs) under tsc --strict against
// this package's types, so that what the documentation tells a TypeScript user to write compiles.
// Each snippet is its own module (its top-level names do not meet another's), so it declares what
// it uses without defining (`declare const client: CoachClient`); it may import '@coachgw/client'
// (and its subpaths), 'vue', 'react' and 'ai', which resolve from this package. The
// snippets are written to a temporary directory inside this package, so that '@coachgw/client'
// resolves to this package by name as it would in an app, and removed afterwards.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const repo = path.resolve(root, '../..');

/** markdownFiles lists the Markdown files under dir, skipping dependencies and dot directories. */
function markdownFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name.startsWith('.') || e.name === 'node_modules') return [];
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return markdownFiles(p);
    return e.name.endsWith('.md') ? [p] : [];
  });
}

/** snippets returns the TypeScript fences of a Markdown text with the line each starts on. */
function snippets(text) {
  const out = [];
  let open = null;
  text.split('\n').forEach((line, i) => {
    const fence = line.trim().match(/^```(\S*)/);
    if (open === null && fence) {
      open = { lang: fence[1], line: i + 2, lines: [] };
    } else if (open !== null && line.trim().startsWith('```')) {
      if (open.lang === 'ts' || open.lang === 'typescript') out.push(open);
      open = null;
    } else if (open !== null) {
      open.lines.push(line);
    }
  });
  return out;
}

const tmp = mkdtempSync(path.join(root, '.doc-snippets-'));
try {
  const sources = new Map();
  for (const file of markdownFiles(repo)) {
    const rel = path.relative(repo, file);
    for (const s of snippets(readFileSync(file, 'utf8'))) {
      const name = `${rel.replace(/[^A-Za-z0-9]+/g, '_')}_L${s.line}.ts`;
      sources.set(name, `${rel}:${s.line}`);
      // export {} makes a snippet without imports a module too.
      writeFileSync(path.join(tmp, name), `${s.lines.join('\n')}\nexport {};\n`);
    }
  }
  if (sources.size === 0) {
    console.error('check-doc-snippets: no ```ts snippet found in the documentation');
    process.exit(1);
  }
  writeFileSync(path.join(tmp, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'es2022',
      module: 'nodenext',
      moduleResolution: 'nodenext',
      lib: ['es2022', 'dom', 'dom.iterable'],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      // Node's globals (process, Buffer) for snippets written as Node scripts, when the types
      // are installed (@types/node comes with the dev dependencies' lock).
      types: existsSync(path.join(root, 'node_modules/@types/node')) ? ['node'] : [],
    },
    include: ['*.ts'],
  }));
  try {
    execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', tmp, '--pretty', 'false'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    // Name each error by the Markdown file and line its snippet starts on.
    const out = `${err.stdout ?? ''}${err.stderr ?? ''}`.replace(/^.*?([A-Za-z0-9_]+_L\d+\.ts)\((\d+),(\d+)\)/gm,
      (_, name, line, col) => `${sources.get(name) ?? name} (snippet line ${line}, column ${col})`);
    console.error(`check-doc-snippets: a TypeScript snippet of the documentation does not compile under tsc --strict:\n${out}`);
    process.exit(1);
  }
  console.log(`check-doc-snippets: ${sources.size} TypeScript snippets compile under tsc --strict`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
