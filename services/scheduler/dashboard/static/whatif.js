// The experiment page's what-if panel (docs/how-to/whatif.md), beside dashboard.js: on a finished
// experiment, replays its recorded results through another trial scheduler (GET
// /api/experiments/NAME/whatif, the scheduler's `whatif` control request) and shows the report
// beside what happened (training iterations, trial-seconds, best final metric, the actual best
// trial's fate, regret, trials unknown beyond their record), or with a sweep one row per setting
// with the cheapest setting that keeps the actual best trial marked. Presets fill the form; any
// other scheduler (a JSON map) can be typed. Read-only: a viewer may use it.
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
  const num = (v) => {
    if (v === null || v === undefined) return '–';
    if (typeof v !== 'number') return String(v);
    return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(4)));
  };
  const PRESETS = [
    {
      label: 'ASHA (grace 1, ×4)',
      scheduler: { type: 'asha', grace_period: 1, reduction_factor: 4 },
    },
    {
      label: 'ASHA (grace 2, ×3)',
      scheduler: { type: 'asha', grace_period: 2, reduction_factor: 3 },
    },
    { label: 'HyperBand (×3)', scheduler: { type: 'hyperband', reduction_factor: 3 } },
    {
      label: 'Median stopping',
      scheduler: {
        type: 'median_stopping',
        time_attr: 'training_iteration',
        grace_period: 2,
        min_samples_required: 3,
      },
    },
    {
      label: 'ASHA sweep',
      scheduler: { type: 'asha' },
      sweep: { grace_period: [1, 2, 4], reduction_factor: [2, 3, 4] },
    },
  ];
  const journal = decodeURIComponent(location.pathname.replace(/^\/experiments\//, ''));

  // Where the actual best trial ended in a replay, in words.
  function fateText(fate, stoppedAt, detail) {
    if (fate === 'as_recorded') return 'kept, as it ran';
    if (fate === 'unknown_beyond') return 'kept (run past its record: unknown beyond)';
    if (fate === 'left_paused') return 'left paused';
    if (fate !== 'stopped') return fate || '–';
    let out = `stopped at training_iteration ${num(stoppedAt)}`;
    if (detail && detail.rung !== undefined) out += ` (rung ${num(detail.rung)})`;
    else if (detail && detail.median !== undefined) out += ` (median ${num(detail.median)})`;
    return out;
  }

  const headRow = (...cells) =>
    make('thead', {}, make('tr', {}, ...cells.map((h) => make('th', {}, h))));

  // The report's rows: actual, replay and saved of each quantity.
  function reportRows(r) {
    const row = (label, key, sides) =>
      make(
        'tr',
        { 'data-row': key },
        make('th', {}, label),
        ...['actual', 'replay', 'saved'].map((side, i) =>
          make('td', { class: 'num', 'data-side': side }, sides[i]),
        ),
      );
    const a = r.actual,
      p = r.replay;
    return [
      row('training iterations', 'training_iterations', [
        num(a.training_iterations),
        num(p.training_iterations),
        num(a.training_iterations - p.training_iterations),
      ]),
      row('trial-seconds', 'trial_seconds', [
        num(a.trial_seconds),
        num(p.trial_seconds),
        num(a.trial_seconds - p.trial_seconds),
      ]),
      row(`best final ${r.metric}`, 'best_final', [
        num(a.best_final),
        num(p.best_final),
        `regret ${num(r.regret)}`,
      ]),
      row('best trial', 'best_trial_id', [a.best_trial_id || '–', p.best_trial_id || '–', '']),
    ];
  }

  function reportTable(r) {
    const b = r.actual_best || {};
    return [
      make('h3', {}, `${r.scheduler} ${JSON.stringify(r.scheduler_config)}`),
      make(
        'table',
        { id: 'whatif-report' },
        headRow('', 'actual', 'replay', 'saved'),
        make('tbody', {}, ...reportRows(r)),
      ),
      make(
        'p',
        { id: 'whatif-fate', 'data-fate': b.fate || '' },
        `The actual best trial ${b.trial_id || '–'}: `,
        fateText(b.fate, b.last_training_iteration, b.stop_detail),
      ),
      make(
        'p',
        { id: 'whatif-counts', class: 'note', 'data-unknown-beyond': r.trials_unknown_beyond },
        `${r.trials} trials: ${r.trials_stopped} stopped, ${r.trials_unknown_beyond} unknown ` +
          `beyond their record (not counted past it), ${r.trials_left_paused} left paused.`,
      ),
    ];
  }

  // One row of the sweep's table; `cheapest` marks the cheapest setting keeping the best.
  function sweepRow(params, row, i, cheapest) {
    return make(
      'tr',
      { class: cheapest ? 'cheapest' : null, 'data-index': i, 'data-keeps': row.keeps_actual_best },
      make('td', {}, cheapest ? '★' : ''),
      ...params.map((k) => make('td', { class: 'num' }, num(row.setting[k]))),
      make('td', { class: 'num' }, num(row.training_iterations)),
      make('td', { class: 'num' }, num(row.trial_seconds)),
      make('td', { class: 'num' }, num(row.best_final)),
      make('td', {}, row.keeps_actual_best ? 'yes' : 'no'),
      make('td', { class: 'num' }, num(row.regret)),
      make(
        'td',
        {},
        fateText(row.actual_best_fate, row.actual_best_stopped_at, row.actual_best_stop_detail),
      ),
    );
  }

  function sweepTable(r) {
    const params = Object.keys(r.sweep);
    const a = r.actual;
    const head = headRow('', ...params, 'iterations', 'trial-seconds', 'best final', 'keeps best');
    head.firstChild.append(make('th', {}, 'regret'), make('th', {}, 'the actual best'));
    const rows = r.rows.map((row, i) => sweepRow(params, row, i, r.cheapest_keeping === i));
    return [
      make('h3', {}, `${r.scheduler} ${JSON.stringify(r.base)} over ${JSON.stringify(r.sweep)}`),
      make(
        'p',
        { class: 'note' },
        `actual run: ${num(a.training_iterations)} training iterations, ` +
          `${num(a.trial_seconds)} trial-seconds, best final ${num(a.best_final)} ` +
          `(${a.best_trial_id || '–'})`,
      ),
      make(
        'div',
        { class: 'scroll' },
        make('table', { id: 'whatif-sweep' }, head, make('tbody', {}, ...rows)),
      ),
      make(
        'p',
        { class: 'note' },
        r.cheapest_keeping === null
          ? 'No setting keeps the actual best trial.'
          : '★ the cheapest setting (fewest trial-seconds) that keeps the actual best trial.',
      ),
    ];
  }

  async function replay() {
    const error = byId('whatif-error');
    const out = byId('whatif-result');
    error.textContent = '';
    const params = new URLSearchParams({
      scheduler: byId('whatif-scheduler').value.trim() || '{}',
    });
    const sweep = byId('whatif-sweep').value.trim();
    if (sweep) params.set('sweep', sweep);
    out.replaceChildren(make('p', { class: 'note' }, 'replaying…'));
    const r = await fetch(`/api/experiments/${encodeURIComponent(journal)}/whatif?${params}`, {
      cache: 'no-store',
    });
    const body = await r.json().catch(() => ({ error: `${r.status} ${r.statusText}` }));
    if (!r.ok) {
      out.replaceChildren();
      error.textContent = body.error || `${r.status} ${r.statusText}`;
      return;
    }
    out.replaceChildren(...(sweep ? sweepTable(body) : reportTable(body)));
    out.dataset.replayed = String(Number(out.dataset.replayed || 0) + 1);
  }

  async function init() {
    const presets = byId('whatif-presets');
    if (!presets) return;
    for (const p of PRESETS) {
      const b = make('button', { type: 'button', 'data-preset': p.label }, p.label);
      b.addEventListener('click', () => {
        byId('whatif-scheduler').value = JSON.stringify(p.scheduler);
        byId('whatif-sweep').value = p.sweep ? JSON.stringify(p.sweep) : '';
      });
      presets.append(b);
    }
    byId('whatif-scheduler').value = JSON.stringify(PRESETS[0].scheduler);
    byId('whatif-run').addEventListener('click', () =>
      replay().catch((e) => (byId('whatif-error').textContent = String(e))),
    );
    const r = await fetch(`/api/experiments/${encodeURIComponent(journal)}`, { cache: 'no-store' });
    const summary = await r.json().catch(() => ({}));
    byId('whatif-note').textContent = summary.finished
      ? 'Replays the recorded results, in the order they arrived, through the scheduler below; trials the run stopped early are never run past their record.'
      : 'Available once the experiment has finished (the replay reads its whole record).';
  }

  document.addEventListener('DOMContentLoaded', () => init().catch(() => {}));
})();
