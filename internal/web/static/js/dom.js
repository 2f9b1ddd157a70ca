// @ts-check
// DOM helpers. Everything the panel shows is built with createElement and text nodes: no HTML
// string is ever parsed, so text from the model or the learner cannot become markup.

const PROPERTIES = new Set(['value', 'checked', 'disabled', 'hidden', 'selected', 'required', 'readOnly', 'maxLength', 'min', 'max', 'rows']);

/**
 * Child is what h and append take as children: nodes, text, nothing, or lists of them.
 * @typedef {Node | string | number | null | undefined | false | Child[]} Child
 */

/**
 * h creates an element. props: "class", "testid" (data-testid), "dataset", "on<event>" handlers,
 * DOM properties of PROPERTIES, and attributes; null, undefined and false are left out. Children
 * are nodes, strings (as text) or arrays of them.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, any> | null} [props]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  /** @type {Record<string, any>} */
  const any = el;
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'innerHTML' || key === 'outerHTML') throw new Error('h: markup properties are not allowed');
    if (key === 'class') el.className = value;
    else if (key === 'testid') el.dataset.testid = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (PROPERTIES.has(key)) any[key] = value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

/**
 * append adds children (nodes, strings, arrays, null) to parent.
 * @template {ParentNode} P
 * @param {P} parent
 * @param {Child} children
 * @returns {P}
 */
export function append(parent, children) {
  if (Array.isArray(children)) {
    for (const c of children) append(parent, c);
  } else if (children !== null && children !== undefined && children !== false) {
    parent.append(children instanceof Node ? children : document.createTextNode(String(children)));
  }
  return parent;
}

/**
 * clear removes every child of el.
 * @template {Node} E
 * @param {E} el
 * @returns {E}
 */
export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/**
 * frame returns a scheduler that runs fn at most once per animation frame, however often it is asked.
 * @param {() => void} fn
 * @returns {() => void}
 */
export function frame(fn) {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      fn();
    });
  };
}

/**
 * reveal scrolls the page so that el is in view and not under a sticky bar: the bars marked
 * data-sticky="top" (the top bar, the progress on narrow screens) and data-sticky="bottom" (the
 * message box) cover the page's edges while they are stuck, so the visible part of the viewport is
 * what lies between them. It scrolls smoothly unless the user prefers reduced motion; align "top"
 * puts el's top just under the top bars (for a card taller than the space), "nearest" scrolls as
 * little as possible.
 */
/**
 * @param {Element | null | undefined} el
 * @param {{align?: 'nearest' | 'top'}} [options]
 */
export function reveal(el, { align = 'nearest' } = {}) {
  if (!el || !el.isConnected) return;
  const { top, bottom } = stickyEdges();
  const r = el.getBoundingClientRect();
  const room = bottom - top - 2 * REVEAL_GAP;
  let dy = 0;
  if (align === 'top' || r.height > room || r.top < top + REVEAL_GAP) dy = r.top - (top + REVEAL_GAP);
  else if (r.bottom > bottom - REVEAL_GAP) dy = r.bottom - (bottom - REVEAL_GAP);
  if (Math.abs(dy) < 1) return;
  const smooth = !window.matchMedia('(prefers-reduced-motion: reduce)').matches;
  window.scrollBy({ top: dy, behavior: smooth ? 'smooth' : 'auto' });
}

const REVEAL_GAP = 12;

/** stickyEdges returns the band of the viewport that no stuck bar covers, as {top, bottom} in px. */
export function stickyEdges() {
  let top = 0;
  let bottom = window.innerHeight;
  for (const bar of document.querySelectorAll('[data-sticky]')) {
    if (!(bar instanceof HTMLElement) || bar.hidden || !bar.isConnected) continue;
    const style = getComputedStyle(bar);
    if (style.position !== 'sticky' && style.position !== 'fixed') continue;
    const height = bar.getBoundingClientRect().height;
    if (bar.dataset.sticky === 'top') top = Math.max(top, (parseFloat(style.top) || 0) + height);
    else bottom = Math.min(bottom, window.innerHeight - (parseFloat(style.bottom) || 0) - height);
  }
  return { top, bottom };
}

/**
 * autosize grows a textarea with its content, up to its CSS max-height; it returns the function
 * that fits it again (after a change by script).
 * @param {HTMLTextAreaElement} textarea
 * @returns {() => void}
 */
export function autosize(textarea) {
  const fit = () => {
    textarea.style.height = 'auto';
    textarea.style.height = `${textarea.scrollHeight + 2}px`;
  };
  textarea.addEventListener('input', fit);
  return fit;
}
