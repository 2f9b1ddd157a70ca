// @ts-check
// A tiny markdown renderer for model text: paragraphs with line breaks, headings, bulleted and
// numbered lists (nested by indentation), block quotes, fenced code, rules, **bold**, *italic*,
// `code` and http(s) links.
//
// Safety: parsing produces a plain tree of {type, text, children} objects, and rendering builds
// DOM nodes from it with createElement and createTextNode. No HTML string is ever assembled or
// parsed, so "<img onerror=…>" in model text is shown as those characters: escaping is inherent
// rather than a step that could be forgotten. The parser has no DOM dependency and is unit-tested
// under node (e2e/run.mjs).

const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
const BULLET = /^(\s*)[-*+•]\s+(.*)$/;
const ORDERED = /^(\s*)(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const FENCE = /^\s{0,3}(```|~~~)/;

/**
 * MdNode is a node of the parsed tree: its type, and the members of that type (children, text,
 * items, level, start, href, lists).
 * @typedef {{type: string} & Record<string, any>} MdNode
 */

/**
 * parseBlocks parses markdown source into a list of block nodes.
 * @param {unknown} src
 * @returns {MdNode[]}
 */
export function parseBlocks(src) {
  const lines = String(src ?? '').replace(/\r\n?/g, '\n').split('\n');
  /** @type {MdNode[]} */
  const blocks = [];
  /** @type {string[] | null} */
  let para = null; // lines of the open paragraph
  /** @type {{node: MdNode, indent: number}[]} */
  let lists = []; // open lists, outermost first

  const closePara = () => {
    if (para) blocks.push({ type: 'paragraph', children: parseInline(para.join('\n')) });
    para = null;
  };
  const closeLists = () => {
    lists = [];
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim() === '') {
      closePara();
      // A blank line inside a list keeps it open only if the next line continues it.
      const next = lines.slice(i + 1).find((l) => l.trim() !== '');
      if (!next || !(BULLET.test(next) || ORDERED.test(next) || /^\s{2,}\S/.test(next))) closeLists();
      continue;
    }
    if (FENCE.test(line)) {
      closePara();
      closeLists();
      const fence = line.trim().slice(0, 3);
      const code = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence); i++) code.push(lines[i]);
      blocks.push({ type: 'code', text: code.join('\n') });
      continue;
    }
    let m;
    if ((m = HEADING.exec(line))) {
      closePara();
      closeLists();
      blocks.push({ type: 'heading', level: m[1].length, children: parseInline(m[2]) });
      continue;
    }
    if (RULE.test(line) && !para) {
      closeLists();
      blocks.push({ type: 'rule' });
      continue;
    }
    if (QUOTE.test(line)) {
      closePara();
      closeLists();
      const quoted = [];
      for (; i < lines.length && (m = QUOTE.exec(lines[i])); i++) quoted.push(m[1]);
      i--;
      blocks.push({ type: 'quote', children: parseBlocks(quoted.join('\n')) });
      continue;
    }
    const bullet = BULLET.exec(line);
    const ordered = bullet ? null : ORDERED.exec(line);
    if (bullet || ordered) {
      closePara();
      const match = /** @type {RegExpExecArray} */ (bullet || ordered);
      const indent = match[1].replace(/\t/g, '    ').length;
      const kind = bullet ? 'bullets' : 'numbers';
      const text = bullet ? bullet[2] : match[3];
      // Close lists indented deeper than this item; open a nested or new list when needed.
      while (lists.length && lists[lists.length - 1].indent > indent) lists.pop();
      let top = lists[lists.length - 1];
      if (top && top.indent === indent && top.node.type !== kind) {
        lists.pop();
        top = lists[lists.length - 1];
      }
      if (!top || top.indent < indent) {
        /** @type {MdNode} */
        const node = { type: kind, items: [] };
        if (kind === 'numbers') node.start = Number(match[2]);
        if (top && top.node.items.length) top.node.items[top.node.items.length - 1].lists.push(node);
        else blocks.push(node);
        lists.push({ node, indent });
        top = lists[lists.length - 1];
      }
      top.node.items.push({ children: parseInline(text), lists: [] });
      continue;
    }
    if (lists.length && /^\s+\S/.test(line)) {
      // An indented line continues the last list item.
      const items = lists[lists.length - 1].node.items;
      const item = items[items.length - 1];
      item.children.push({ type: 'break' }, ...parseInline(line.trim()));
      continue;
    }
    closeLists();
    (para ||= []).push(line.trim());
  }
  closePara();
  return blocks;
}

/**
 * parseInline parses the inline markup of one block into text, strong, em, code, link and break nodes.
 * @param {unknown} src
 * @returns {MdNode[]}
 */
export function parseInline(src) {
  const s = String(src ?? '');
  /** @type {MdNode[]} */
  const out = [];
  let text = '';
  const flush = () => {
    if (text) out.push({ type: 'text', text });
    text = '';
  };
  for (let i = 0; i < s.length; ) {
    const c = s[i];
    if (c === '\\' && i + 1 < s.length && /[\\`*_[\]()#+\-.!>~]/.test(s[i + 1])) {
      text += s[i + 1];
      i += 2;
      continue;
    }
    if (c === '\n') {
      flush();
      out.push({ type: 'break' });
      i++;
      continue;
    }
    if (c === '`') {
      const end = s.indexOf('`', i + 1);
      if (end > i + 1) {
        flush();
        out.push({ type: 'code', text: s.slice(i + 1, end) });
        i = end + 1;
        continue;
      }
    }
    if ((c === '*' || c === '_') && s[i + 1] === c) {
      const end = closing(s, i + 2, c + c);
      if (end > 0 && (c === '*' || wordBoundary(s, i - 1, end + 2))) {
        flush();
        out.push({ type: 'strong', children: parseInline(s.slice(i + 2, end)) });
        i = end + 2;
        continue;
      }
    }
    if (c === '*' || c === '_') {
      const end = closing(s, i + 1, c);
      if (end > 0 && (c === '*' || wordBoundary(s, i - 1, end + 1))) {
        flush();
        out.push({ type: 'em', children: parseInline(s.slice(i + 1, end)) });
        i = end + 1;
        continue;
      }
    }
    if (c === '[') {
      const m = /^\[([^\]\n]+)\]\((https?:\/\/[^\s()]+)\)/.exec(s.slice(i));
      if (m) {
        flush();
        out.push({ type: 'link', href: m[2], children: parseInline(m[1]) });
        i += m[0].length;
        continue;
      }
    }
    text += c;
    i++;
  }
  flush();
  return out;
}

// closing returns the index of the delimiter that closes an emphasis opened just before from, or
// -1. The opener must touch text (no space after it) and so must the closer (no space before).
/**
 * @param {string} s
 * @param {number} from
 * @param {string} delim
 */
function closing(s, from, delim) {
  if (from >= s.length || /\s/.test(s[from])) return -1;
  for (let j = from + 1; j <= s.length - delim.length; j++) {
    if (s.startsWith(delim, j) && !/\s/.test(s[j - 1])) {
      // A single "*" must not be half of a "**".
      if (delim.length === 1 && (s[j + 1] === delim || s[j - 1] === delim)) continue;
      return j;
    }
  }
  return -1;
}

// wordBoundary says whether "_" emphasis stands outside words, so snake_case stays as written.
/**
 * @param {string} s
 * @param {number} before
 * @param {number} after
 */
function wordBoundary(s, before, after) {
  /** @param {string | undefined} ch */
  const isWord = (ch) => ch !== undefined && /[\p{L}\p{N}]/u.test(ch);
  return !isWord(s[before]) && !isWord(s[after]);
}

/**
 * renderMarkdown renders markdown source as a DocumentFragment. headingBase is the HTML heading
 * level of a "#" heading (default 3: headings inside a message sit below the page's own).
 * @param {unknown} src
 * @param {{headingBase?: number}} [options]
 * @returns {DocumentFragment}
 */
export function renderMarkdown(src, { headingBase = 3 } = {}) {
  const frag = document.createDocumentFragment();
  for (const b of parseBlocks(src)) frag.append(withDir(renderBlock(b, headingBase)));
  return frag;
}

/**
 * withDir gives a block dir="auto", and the items of a list too: each paragraph of model text
 * takes its direction from its own first strong letter (a Hebrew paragraph after an English one
 * reads right to left, and an emoji or "(2024)." at its end stays where the writer put it).
 * @param {HTMLElement} el
 * @returns {HTMLElement}
 */
function withDir(el) {
  el.dir = 'auto';
  el.querySelectorAll('li, p, h1, h2, h3, h4, h5, h6').forEach((c) => { /** @type {HTMLElement} */ (c).dir = 'auto'; });
  return el;
}

/**
 * renderInline renders the inline markup of src (no blocks) as a DocumentFragment.
 * @param {unknown} src
 * @returns {DocumentFragment}
 */
export function renderInline(src) {
  const frag = document.createDocumentFragment();
  appendInline(frag, parseInline(src));
  return frag;
}

/**
 * @param {MdNode} b
 * @param {number} headingBase
 * @returns {HTMLElement}
 */
function renderBlock(b, headingBase) {
  switch (b.type) {
    case 'heading': {
      const el = document.createElement(`h${Math.min(6, headingBase + b.level - 1)}`);
      appendInline(el, b.children);
      return el;
    }
    case 'bullets':
    case 'numbers': {
      const el = b.type === 'bullets' ? document.createElement('ul') : document.createElement('ol');
      if (el instanceof HTMLOListElement && b.start !== 1) el.start = b.start;
      for (const item of b.items) {
        const li = document.createElement('li');
        appendInline(li, item.children);
        for (const nested of item.lists) li.append(renderBlock(nested, headingBase));
        el.append(li);
      }
      return el;
    }
    case 'quote': {
      const el = document.createElement('blockquote');
      for (const child of b.children) el.append(renderBlock(child, headingBase));
      return el;
    }
    case 'code': {
      const pre = document.createElement('pre');
      const code = document.createElement('code');
      code.textContent = b.text;
      pre.append(code);
      return pre;
    }
    case 'rule':
      return document.createElement('hr');
    default: {
      const p = document.createElement('p');
      appendInline(p, b.children);
      return p;
    }
  }
}

/**
 * @param {ParentNode} parent
 * @param {MdNode[]} nodes
 */
function appendInline(parent, nodes) {
  for (const n of nodes) {
    switch (n.type) {
      case 'strong':
      case 'em': {
        const el = document.createElement(n.type);
        appendInline(el, n.children);
        parent.append(el);
        break;
      }
      case 'code': {
        const el = document.createElement('code');
        el.textContent = n.text;
        parent.append(el);
        break;
      }
      case 'link': {
        const a = document.createElement('a');
        a.href = n.href; // only http(s) URLs parse as links
        a.rel = 'noopener noreferrer nofollow';
        a.target = '_blank';
        appendInline(a, n.children);
        parent.append(a);
        break;
      }
      case 'break':
        parent.append(document.createElement('br'));
        break;
      default:
        parent.append(document.createTextNode(n.text));
    }
  }
}
