// @ts-check
// Keeping one session in step wherever else it is open: other tabs of this browser hear of every
// change at once (a BroadcastChannel per session), other devices are caught by the session's
// version, read again when the tab gets the focus back and before anything is sent. When the
// version has moved, the panel is drawn again from the gateway (the conversation, the step, the
// draft), and what the learner was about to send stays in the box: it is never sent under a step
// or a card the learner has not seen. A turn one tab starts is followed by the others as it
// streams (they hear of it at once, or look for one when they come back to the front), so that
// none of them offers a Send the gateway would refuse.

import { client } from './coach.js';

/** @typedef {{id: string, version: number}} Versioned */

export class SessionSync {
  /**
   * @param {Versioned} session the session as the panel was drawn from it
   * @param {object} o
   * @param {(session: any) => void} o.reload draws the panel again from session
   * @param {() => boolean} o.busy whether a turn of this tab is under way (its result brings the new version)
   * @param {(session: any) => void} [o.changed] told of every newer session this tab sees
   */
  constructor(session, { reload, busy, changed }) {
    this.onChanged = changed;
    this.id = session.id;
    this.version = Number(session.version) || 0;
    this.reload = reload;
    this.busy = busy;
    this.closed = false;
    /**
     * onTurn, set by the panel's Turns, shows the session's running turn begun elsewhere; meta
     * is what the sending tab kept with it, null when this tab only looks whether one runs.
     * @type {((meta: any) => void) | null}
     */
    this.onTurn = null;
    /** @type {BroadcastChannel | null} */
    this.channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(`coachgw.session.${this.id}`) : null;
    if (this.channel) {
      this.channel.onmessage = (e) => {
        if (e.data && e.data.turn) {
          // Turns decides, busy or not: a turn of its own ends first.
          if (!this.closed) this.onTurn?.(e.data.meta ?? null);
          return;
        }
        const v = Number(e.data && e.data.version);
        if (v > this.version) this.check();
      };
    }
    this.onFocus = () => this.check(true);
    window.addEventListener('focus', this.onFocus);
    this.onVisible = () => { if (document.visibilityState === 'visible') this.check(true); };
    document.addEventListener('visibilitychange', this.onVisible);
  }

  /**
   * changed records a session this tab received after a change it made, and tells the other tabs.
   * @param {Versioned | null | undefined} session
   */
  changed(session) {
    const v = Number(session && session.id === this.id ? session.version : 0);
    if (!(v > this.version)) return;
    this.version = v;
    this.onChanged?.(session);
    this.channel?.postMessage({ version: v });
  }

  /**
   * turnStarted tells the other tabs that this tab's turn is under way (the gateway took it);
   * meta is what they draw it from.
   * @param {any} meta
   */
  turnStarted(meta) {
    this.channel?.postMessage({ turn: true, meta });
  }

  /**
   * fresh reads the session's version and returns true when it is the one on screen; when it has
   * moved, the panel is drawn again and fresh returns false. When the session cannot be read it
   * returns true: the request that follows reports the problem.
   * @returns {Promise<boolean>}
   */
  async fresh() {
    let s;
    try {
      s = await client.getSession(this.id);
    } catch {
      return true;
    }
    if (this.closed) return false;
    if (Number(s.version) === this.version) return true;
    this.version = Number(s.version);
    this.reload(s);
    return false;
  }

  /**
   * check draws the panel again if the session moved elsewhere, unless a turn of this tab runs;
   * look: when it has not moved, a turn running elsewhere (a message this tab missed while in
   * the background) is followed.
   * @param {boolean} [look]
   */
  async check(look = false) {
    if (this.closed || this.busy()) return;
    if ((await this.fresh()) && look && !this.closed && !this.busy()) this.onTurn?.(null);
  }

  close() {
    this.closed = true;
    this.channel?.close();
    window.removeEventListener('focus', this.onFocus);
    document.removeEventListener('visibilitychange', this.onVisible);
  }
}
