// The dashboard's sign-in and control (docs/how-to/dashboard.md "Control"), beside dashboard.js: the
// header shows who is signed in (GET /api/session) with a sign-out button, or a sign-in link.
// On an experiment's page a signed-in operator gets, besides the read-only views:
//   - a control column in the trial table (pause / resume / stop by the trial's status), added to
//     each row dashboard.js renders (a MutationObserver: dashboard.js knows nothing of it);
//   - a control bar: stop or interrupt the experiment, set its weight.
// Every action is a POST carrying the session's CSRF token in the X-CSRF-Token header; the
// scheduler checks the session's login token again. Everyone sees the action log (who did what,
// when, and what came of it). A viewer, or a browser not signed in, gets no control at all.
'use strict';
(() => {
  const byId = (id) => document.getElementById(id);
  const make = (tag, attrs, ...children) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null) continue;
      if (k === 'class') e.className = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : String(c ?? ''));
    return e;
  };
  // Trial actions by status, in button order.
  const TRIAL_ACTIONS = {
    PENDING: ['pause', 'stop'],
    RUNNING: ['pause', 'stop'],
    PAUSED: ['resume', 'stop'],
  };
  let session = { signed_in: false };
  const isOperator = () => session.signed_in && session.role === 'operator';

  async function post(url, body) {
    const r = await fetch(url, {
      method: 'POST',
      cache: 'no-store',
      credentials: 'same-origin',
      headers: { 'X-CSRF-Token': session.csrf || '', 'Content-Type': 'application/json' },
      body: JSON.stringify(body || {}),
    });
    const out = await r.json().catch(() => ({ error: `${r.status} ${r.statusText}` }));
    return { status: r.status, ok: r.ok, ...out };
  }

  function renderSession() {
    const header = document.querySelector('header');
    let box = byId('session');
    if (!box) {
      box = make('span', { id: 'session', class: 'session' });
      header.append(box);
    }
    if (!session.signed_in) {
      box.replaceChildren(make('a', { id: 'sign-in', href: '/login' }, 'sign in'));
      return;
    }
    const out = make('button', { id: 'sign-out', type: 'button' }, 'sign out');
    out.addEventListener('click', async () => {
      await post('/logout');
      location.reload();
    });
    box.replaceChildren(
      make('span', { class: 'who' }, session.name),
      make('span', { class: `role ${session.role}` }, session.role),
      out,
    );
  }

  // The action log under the trial table (everyone sees it); returns its loader, which also
  // runs every 3 s.
  function actionLog(journal) {
    const when = (t) => new Date(1000 * t).toLocaleTimeString();
    const log = make(
      'table',
      { id: 'action-log' },
      make(
        'thead',
        {},
        make(
          'tr',
          {},
          ...['time', 'who', 'action', 'target', 'result'].map((h) => make('th', {}, h)),
        ),
      ),
      make('tbody', {}),
    );
    const logNote = make(
      'p',
      { class: 'note', id: 'action-log-empty' },
      'No action taken in the dashboard yet.',
    );
    byId('trials')
      .closest('section')
      .after(make('section', { id: 'actions' }, make('h2', {}, 'Actions'), logNote, log));
    const row = (e) =>
      make(
        'tr',
        { 'data-action': e.action, 'data-trial-id': e.trial_id || '' },
        make('td', {}, when(e.time)),
        make('td', {}, `${e.who} (${e.role})`),
        make('td', {}, e.action + (e.weight !== undefined ? ` ${e.weight}` : '')),
        make('td', {}, e.trial_id || e.experiment),
        make(
          'td',
          { class: `result ${e.ok ? 'ok' : 'refused'}` },
          `${e.ok ? 'ok' : 'refused'}: ${e.result}`,
        ),
      );
    const loadLog = async () => {
      try {
        const r = await fetch(`/api/actions?experiment=${encodeURIComponent(journal)}`, {
          cache: 'no-store',
        });
        const entries = await r.json();
        log.tBodies[0].replaceChildren(...entries.map(row));
        logNote.hidden = entries.length > 0;
      } catch {
        /* the next poll retries */
      }
    };
    loadLog();
    setInterval(loadLog, 3000);
    return loadLog;
  }

  // The experiment's control bar, under the summary: stop, interrupt, set the weight.
  function controlBar(journal, api, act) {
    const weight = make('input', {
      id: 'weight-input',
      type: 'number',
      min: '0.01',
      step: 'any',
      value: '1',
      'aria-label': 'weight',
    });
    const button = (id, text, cls) => make('button', { id, type: 'button', class: cls }, text);
    const stopX = button('stop-experiment', 'stop experiment', 'danger');
    const interruptX = button('interrupt-experiment', 'interrupt', 'danger');
    const setWeight = button('set-weight', 'set weight');
    const bar = make(
      'section',
      { id: 'control', class: 'control-bar' },
      make('strong', {}, 'Control'),
      stopX,
      interruptX,
      make('span', {}, 'weight'),
      weight,
      setWeight,
      make('span', { class: 'note' }, 'as ' + session.name),
    );
    byId('summary').after(bar);
    const all = [stopX, interruptX, setWeight];
    stopX.addEventListener('click', () => {
      if (window.confirm(`Stop every unfinished trial of ${journal} and end it?`))
        act(`${api}/stop`, {}, all);
    });
    interruptX.addEventListener('click', () => {
      if (window.confirm(`Interrupt ${journal}? It can be resumed with tunectl resume.`))
        act(`${api}/interrupt`, {}, all);
    });
    setWeight.addEventListener('click', () =>
      act(`${api}/weight`, { weight: Number(weight.value) }, all),
    );
  }

  // A control cell in each row of the trial table, by the row's status, as the rows come.
  function trialControls(api, act) {
    const table = byId('trials');
    const decorate = () => {
      const head = table.tHead.rows[0];
      if (head && head.cells.length && !head.querySelector('th.actions'))
        head.append(make('th', { class: 'actions' }, 'control'));
      for (const tr of table.tBodies[0].rows) {
        if (!tr.dataset.trialId || tr.querySelector('td.actions')) continue;
        const status = (tr.querySelector('.status') || {}).textContent || '';
        const id = tr.dataset.trialId;
        const buttons = (TRIAL_ACTIONS[status] || []).map((a) =>
          make(
            'button',
            {
              type: 'button',
              class: 'trial-action',
              'data-action': a,
              'aria-label': `${a} ${id}`,
            },
            a,
          ),
        );
        for (const b of buttons) {
          b.addEventListener('click', () =>
            act(`${api}/trials/${encodeURIComponent(id)}/${b.dataset.action}`, {}, buttons),
          );
        }
        tr.append(make('td', { class: 'actions' }, ...buttons));
      }
    };
    new MutationObserver(decorate).observe(table, { childList: true, subtree: true });
    decorate();
  }

  function experimentControls() {
    const journal = decodeURIComponent(location.pathname.replace(/^\/experiments\//, ''));
    const api = `/api/experiments/${encodeURIComponent(journal)}`;
    const loadLog = actionLog(journal);
    if (!isOperator()) return;
    // One action: its buttons disabled while it is under way; the log shows its outcome.
    const act = async (url, body, buttons) => {
      for (const b of buttons) b.disabled = true;
      const r = await post(url, body);
      for (const b of buttons) b.disabled = false;
      if (!r.ok) window.console.warn('dashboard action refused:', r.error);
      loadLog();
      return r;
    };
    controlBar(journal, api, act);
    trialControls(api, act);
  }

  document.addEventListener('DOMContentLoaded', async () => {
    try {
      const r = await fetch('/api/session', { cache: 'no-store' });
      session = await r.json();
    } catch {
      session = { signed_in: false };
    }
    renderSession();
    if (document.body.dataset.page === 'experiment') experimentControls();
  });
})();
