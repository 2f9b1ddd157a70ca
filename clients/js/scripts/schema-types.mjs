#!/usr/bin/env node
// schema-types writes src/schemas.js: JSDoc typedefs of the gateway's result types generated from
// the JSON schemas in api/schemas, so the client's types are the schemas' and cannot drift from
// them. With --check it writes nothing and fails when src/schemas.js differs from what it would
// write (CI runs it that way).
//
//   node scripts/schema-types.mjs [--check]
//
// It understands the part of JSON Schema the gateway's schemas use: object (properties,
// required), array (items), string, number, integer, boolean, enum and local $refs to
// definitions. Constraints that a type cannot say (patterns, lengths, ranges) stay in the schemas.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const schemasDir = path.resolve(here, '../../../api/schemas');
const outFile = path.resolve(here, '../src/schemas.js');

/**
 * The schemas turned into types: file, the name of the root type, and the prefix of the names of
 * its definitions' types. A definition's type is named prefix + its name in PascalCase, unless
 * names maps it.
 */
const SOURCES = [
  { file: 'coach-ai-result.json', name: 'CoachAIResult', prefix: '', names: { toulminStep: 'ToulminStep' }, contract: 'toulmin' },
  { file: 'card.json', name: 'FrontendCard', prefix: 'Card', contract: 'cards' },
  { file: 'structured-response.json', name: 'StructuredResponse', prefix: 'Structured', names: { form: 'ModuleForm', form_field: 'ModuleFormField' }, contract: 'module' },
  { file: 'module.json', name: 'Module', prefix: 'Module' },
  { file: 'safety-notice.json', name: 'SafetyNotice', prefix: 'Safety' },
];

const pascal = (s) => s.replace(/(^|[_-])([a-z0-9])/g, (_, __, c) => c.toUpperCase());

/** comment returns text as the lines of a JSDoc comment body. */
function comment(text, indent = ' * ') {
  return text ? text.split('\n').map((l) => `${indent}${l}`.trimEnd()).join('\n') + '\n' : '';
}

class Generator {
  constructor(source, schema) {
    this.source = source;
    this.schema = schema;
  }

  refName(ref) {
    const m = /^#\/definitions\/(.+)$/.exec(ref);
    if (!m) throw new Error(`${this.source.file}: unsupported $ref ${ref}`);
    const def = m[1];
    if (!this.schema.definitions?.[def]) throw new Error(`${this.source.file}: $ref to a missing definition ${def}`);
    return this.source.names?.[def] ?? this.source.prefix + pascal(def);
  }

  /** type returns the TypeScript type expression of schema node s. */
  type(s) {
    if (s.$name) return s.$name;
    if (s.$ref) return this.refName(s.$ref);
    if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
    if (s.const !== undefined) return JSON.stringify(s.const);
    if (s.oneOf || s.anyOf) return (s.oneOf || s.anyOf).map((x) => this.paren(this.type(x))).join(' | ');
    const types = Array.isArray(s.type) ? s.type : [s.type];
    return types.map((t) => this.one(t, s)).join(' | ');
  }

  paren(t) {
    return t.includes(' | ') ? `(${t})` : t;
  }

  one(t, s) {
    switch (t) {
      case 'string':
        return 'string';
      case 'number':
      case 'integer':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'null':
        return 'null';
      case 'array':
        return `Array<${s.items ? this.type(s.items) : 'unknown'}>`;
      case 'object':
      case undefined: {
        if (!s.properties) return 'Record<string, unknown>';
        const req = new Set(s.required || []);
        const members = Object.entries(s.properties).map(([k, v]) => `${key(k)}${req.has(k) ? '' : '?'}: ${this.type(v)}`);
        return `{ ${members.join(', ')} }`;
      }
      default:
        throw new Error(`${this.source.file}: unsupported type ${t}`);
    }
  }

  /** typedef renders a named type: an object as @property lines, anything else inline. */
  typedef(name, s) {
    let out = '/**\n' + comment(s.description || s.title || '');
    if (s.properties && !s.$ref) {
      out += ` * @typedef {object} ${name}\n`;
      const req = new Set(s.required || []);
      for (const [k, v] of Object.entries(s.properties)) {
        const doc = v.description ? ` ${v.description.replace(/\s*\n\s*/g, ' ')}` : '';
        out += ` * @property {${this.type(v)}} ${req.has(k) ? k : `[${k}]`}${doc}\n`;
      }
    } else {
      out += ` * @typedef {${this.type(s)}} ${name}\n`;
    }
    return out + ' */\n';
  }

  render() {
    // A root that is one of several titled shapes (card.json) gets a named type per shape, and
    // the root type is their union.
    const shapes = (this.schema.oneOf || []).filter((b) => b.title);
    let root = this.schema;
    let out = `// ${this.source.file}\n\n`;
    if (shapes.length > 0 && shapes.length === this.schema.oneOf.length) {
      const names = shapes.map((b) => b.title.replace(/-/g, ' ').split(/\s+/).map((w) => w[0].toUpperCase() + w.slice(1)).join(''));
      root = { description: this.schema.description, oneOf: names.map((n) => ({ $name: n })) };
      shapes.forEach((b, i) => {
        out += this.typedef(names[i], { ...b, description: b.description ? `${b.title}: ${b.description}` : b.title }) + '\n';
      });
    }
    out += this.typedef(this.source.name, root);
    for (const [def, s] of Object.entries(this.schema.definitions || {})) {
      out += '\n' + this.typedef(this.refName(`#/definitions/${def}`), s);
    }
    return out;
  }
}

function key(k) {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(k) ? k : JSON.stringify(k);
}

/** generate returns the text of src/schemas.js. */
export function generate() {
  let out = `// Code generated by scripts/schema-types.mjs from api/schemas; DO NOT EDIT.
// The result types of the gateway's contracts and the safety line's notice, as JSDoc typedefs. Run
// \`node scripts/schema-types.mjs\` after a schema changes; CI fails when this file is stale.
`;
  for (const source of SOURCES) {
    const file = path.join(schemasDir, source.file);
    if (!existsSync(file)) throw new Error(`missing schema ${file}`);
    out += '\n' + new Generator(source, JSON.parse(readFileSync(file, 'utf8'))).render();
  }
  // The result type of each contract, which the types of a turn's result line and of the chat
  // route's data-coach-result part (src/ai.js) are keyed by.
  const results = SOURCES.filter((s) => s.contract);
  out += '\n/**\n * The result type of each contract: the `result` of its result line and data-coach-result part.\n';
  out += ` * @typedef {{ ${results.map((s) => `${s.contract}: ${s.name}`).join(', ')} }} ContractResults\n */\n`;
  return out + '\nexport {};\n';
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = generate();
  if (process.argv.includes('--check')) {
    const have = existsSync(outFile) ? readFileSync(outFile, 'utf8') : '';
    if (have !== text) {
      console.error('src/schemas.js is stale: run `node scripts/schema-types.mjs` in clients/js and commit the result');
      process.exit(1);
    }
  } else {
    writeFileSync(outFile, text);
  }
}
