// A DOM for the bindings' tests: happy-dom's window, installed as the globals Vue's and React's
// DOM renderers look for. Import it before vue or react-dom. The client itself keeps Node's own
// fetch: the tests talk to the real gateway.

import { Window } from 'happy-dom';

const window = new Window({ url: 'http://localhost/' });
for (const name of ['window', 'document', 'navigator', 'Node', 'Element', 'HTMLElement', 'SVGElement', 'Text', 'Comment', 'Event', 'MouseEvent', 'KeyboardEvent', 'MutationObserver', 'getComputedStyle', 'requestAnimationFrame', 'cancelAnimationFrame']) {
  if (!(name in globalThis) || name === 'window' || name === 'document' || name === 'navigator') {
    const value = name === 'window' ? window : window[name];
    Object.defineProperty(globalThis, name, { value: typeof value === 'function' && !/^[A-Z]/.test(name) ? value.bind(window) : value, configurable: true, writable: true });
  }
}

/** mountPoint returns a new element attached to the document. */
export function mountPoint() {
  const el = document.createElement('div');
  document.body.appendChild(el);
  return el;
}

/** waitFor polls cond (every 5 ms, up to 5 s) and returns its first truthy value. */
export async function waitFor(cond, what) {
  const deadline = Date.now() + 5000;
  for (;;) {
    const v = cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** text returns the text of the element with data-testid id under root. */
export function text(root, id) {
  return root.querySelector(`[data-testid="${id}"]`)?.textContent ?? '';
}

export { window };
