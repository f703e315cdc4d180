// The tunebus dashboard's analysis views (docs/how-to/dashboard.md): the experiments page's progress
// bars with an ETA, and on one experiment's page the optimization history, the parallel
// coordinates, the hyperparameter importance, the trial scheduler's decisions and the searcher's
// phase. Data comes from /api/experiments/NAME/{analysis,decisions} (one columnar answer for all
// trials, cached by the server); the panels refetch when dashboard.js relays an event
// ('tunebus:event' on document), at most once a second. Read-only, like dashboard.js.
'use strict';
/* exported tunebusCharts */

const tunebusCharts = (() => {
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
    if (Number.isInteger(v)) return String(v);
    const a = Math.abs(v);
    return a !== 0 && (a >= 1e5 || a < 1e-3)
      ? v.toExponential(3)
      : String(Number(v.toPrecision(4)));
  };

  // "1 h 02 min", "3 min 05 s", "42 s".
  function duration(s) {
    if (s === null || s === undefined || !isFinite(s)) return '–';
    if (s > 0 && s < 1) return '< 1 s';
    s = Math.max(0, Math.round(s));
    const h = Math.floor(s / 3600),
      m = Math.floor((s % 3600) / 60),
      sec = s % 60;
    if (h) return `${h} h ${String(m).padStart(2, '0')} min`;
    if (m) return `${m} min ${String(sec).padStart(2, '0')} s`;
    return `${sec} s`;
  }

  // ------------------------------------------------------------ the experiments page

  // A progress bar with its ETA for an experiment row's `progress` (dashboard/views/analysis.hpp).
  function progress(p) {
    const box = make('div', { class: 'progress' });
    if (!p || p.fraction === null || p.fraction === undefined) {
      box.append(make('span', { class: 'note' }, p && p.total < 0 ? 'no total' : '–'));
      return box;
    }
    const bar = make('div', {
      class: 'bar',
      role: 'progressbar',
      'aria-valuemin': 0,
      'aria-valuemax': 100,
      'aria-valuenow': Math.round(100 * p.fraction),
    });
    const fill = make('div', { class: 'fill' });
    fill.style.width = `${(100 * p.fraction).toFixed(1)}%`;
    bar.append(fill);
    const what =
      p.basis === 'time_budget'
        ? `${duration(p.elapsed_s)} of ${duration(p.time_budget_s)}`
        : `${p.finished}/${p.total}`;
    const eta = p.eta_s === null ? 'ETA –' : p.eta_s === 0 ? 'done' : `ETA ${duration(p.eta_s)}`;
    box.dataset.fraction = p.fraction;
    box.dataset.etaS = p.eta_s === null ? '' : p.eta_s;
    box.title = p.eta_method ? `ETA: ${p.eta_method}` : '';
    box.append(
      bar,
      make('span', { class: 'progress-text' }, `${(100 * p.fraction).toFixed(0)}% · ${what}`),
      make('span', { class: 'eta' }, eta),
    );
    return box;
  }

  // ------------------------------------------------------------ one experiment's page

  const COLOURS = { point: '#1f77b4', best: '#d62728', bar: '#2ca02c' };

  // Blue (worst) to red (best) for a value's rank in [0, 1].
  function heat(f) {
    const r = Math.round(40 + 200 * f),
      b = Math.round(220 - 190 * f),
      g = Math.round(90 + 40 * (1 - Math.abs(2 * f - 1)));
    return `rgb(${r},${g},${b})`;
  }

  // The best-so-far of `values` in trial order (null until the first value).
  function bestSoFar(values, mode) {
    let best = null;
    return values.map((v) => {
      if (typeof v === 'number' && (best === null || (mode === 'min' ? v < best : v > best)))
        best = v;
      return best;
    });
  }

  // Each parameter axis as a function value -> [0, 1] (null when missing) and its label lines.
  // Numbers spanning two decades or more, all > 0, are on a log scale.
  function axes(cols) {
    const out = cols.params.map((p) => {
      if (p.kind === 'categorical') {
        const k = p.categories.length;
        return {
          name: p.name,
          norm: (v) => (v === null ? null : k > 1 ? v / (k - 1) : 0.5),
          label: [p.name, p.categories.join(' · ').slice(0, 40)],
        };
      }
      const log = p.min > 0 && p.max / p.min >= 100;
      const f = log ? Math.log : (x) => x;
      const lo = f(p.min),
        span = f(p.max) - f(p.min);
      return {
        name: p.name,
        norm: (v) => (v === null ? null : span > 0 ? (f(v) - lo) / span : 0.5),
        label: [p.name + (log ? ' (log)' : ''), `${num(p.min)} – ${num(p.max)}`],
      };
    });
    const vals = cols.value.filter((v) => typeof v === 'number');
    const lo = Math.min(...vals),
      hi = Math.max(...vals);
    out.push({
      name: cols.metric,
      metric: true,
      norm: (v) => (typeof v !== 'number' ? null : hi > lo ? (v - lo) / (hi - lo) : 0.5),
      label: [cols.metric || 'metric', vals.length ? `${num(lo)} – ${num(hi)}` : ''],
    });
    return out;
  }

  const MAX_LINES = 1000; // parallel-coordinate lines drawn (every k-th trial and the best beyond)

  // A function (id, config) that draws the Chart.js chart of canvas `id` from `config`, or
  // redraws the one it drew there before; null when Chart.js is not `available`.
  function chartDrawer(available) {
    const charts = {};
    return (id, config) => {
      if (!available) return null;
      if (charts[id]) {
        charts[id].data = config.data;
        charts[id].options.scales = config.options.scales;
        charts[id].update('none');
      } else {
        config.options = Object.assign(
          { animation: false, maintainAspectRatio: false },
          config.options,
        );
        charts[id] = new Chart(byId(id), config);
      }
      return charts[id];
    };
  }

  // The optimization history: each trial's metric by trial number, and the best so far.
  function drawHistory(cols, chart) {
    const points = [],
      numbers = [];
    cols.value.forEach((v, i) => {
      if (typeof v === 'number') {
        points.push({ x: i, y: v });
        numbers.push(i);
      }
    });
    const best = bestSoFar(cols.value, cols.mode);
    const line = numbers.map((i) => ({ x: i, y: best[i] }));
    byId('history-note').textContent = points.length
      ? `${points.length} trials with ${cols.metric}; best so far (${cols.mode}) ${num(line[line.length - 1].y)}`
      : `no trial has reported ${cols.metric} yet`;
    chart('history', {
      type: 'line',
      data: {
        datasets: [
          {
            label: 'trial',
            data: points,
            showLine: false,
            pointRadius: 3,
            borderColor: COLOURS.point,
            backgroundColor: COLOURS.point,
          },
          {
            label: 'best so far',
            data: line,
            stepped: true,
            pointRadius: 0,
            borderWidth: 2,
            borderColor: COLOURS.best,
            backgroundColor: COLOURS.best,
          },
        ],
      },
      options: {
        parsing: false,
        scales: {
          x: { type: 'linear', title: { display: true, text: 'trial number' } },
          y: { type: 'linear', title: { display: true, text: `${cols.metric} (last result)` } },
        },
      },
    });
  }

  // The trials with the metric (their indexes), every k-th and the best beyond MAX_LINES.
  function parallelRows(cols) {
    let rows = [];
    cols.value.forEach((v, i) => {
      if (typeof v === 'number') rows.push(i);
    });
    if (rows.length > MAX_LINES) {
      const best = bestSoFar(cols.value, cols.mode);
      const bestValue = best[best.length - 1];
      const step = rows.length / MAX_LINES;
      const kept = new Set();
      for (let k = 0; k < MAX_LINES - 1; k++) kept.add(rows[Math.floor(k * step)]);
      const bestRow = rows.find((i) => cols.value[i] === bestValue);
      if (bestRow !== undefined) kept.add(bestRow);
      rows = [...kept].sort((a, b) => a - b);
    }
    return rows;
  }

  // The parallel coordinates: one line per trial across the parameter axes and the metric's.
  function drawParallel(cols, chart) {
    const ax = axes(cols);
    const shownAll = cols.value.filter((v) => typeof v === 'number').length;
    const rows = parallelRows(cols);
    const metricAxis = ax[ax.length - 1];
    const datasets = rows.map((i) => {
      const f = metricAxis.norm(cols.value[i]);
      const rank = cols.mode === 'min' ? 1 - f : f;
      return {
        label: cols.trial_id[i],
        data: ax.map((a, j) => (a.metric ? f : a.norm(cols.params[j].values[i]))),
        borderColor: heat(rank),
        backgroundColor: heat(rank),
        borderWidth: 1.5,
        pointRadius: 2,
        spanGaps: false,
        fill: false,
      };
    });
    byId('parallel-note').textContent = cols.params.length
      ? `${shownAll} trials with ${cols.metric}${shownAll > rows.length ? `, ${rows.length} drawn` : ''}; ` +
        'each axis scaled to its range (categories evenly spaced); red = best'
      : 'no config key varies between the trials';
    chart('parallel', {
      type: 'line',
      data: { labels: ax.map((a) => a.label), datasets },
      options: {
        plugins: { legend: { display: false } },
        scales: {
          x: { type: 'category', grid: { color: '#999' } },
          y: {
            type: 'linear',
            min: 0,
            max: 1,
            title: { display: true, text: 'scaled to each axis' },
          },
        },
      },
    });
  }

  // The hyperparameter importance: a list and a bar chart, most important first.
  function drawImportance(imp, chart) {
    const params = imp.params || [];
    byId('importance-note').textContent = params.length
      ? `${imp.method}, over ${imp.trials} trials with the metric`
      : 'no config key varies between the trials';
    const list = byId('importance-list');
    list.replaceChildren(
      ...params.map((p, i) =>
        make(
          'li',
          { 'data-param': p.name, 'data-rank': i + 1, 'data-importance': p.importance },
          `${p.name}: ${(100 * p.importance).toFixed(1)}%`,
        ),
      ),
    );
    chart('importance', {
      type: 'bar',
      data: {
        labels: params.map((p) => p.name),
        datasets: [
          {
            label: 'importance',
            data: params.map((p) => p.importance),
            backgroundColor: COLOURS.bar,
            borderColor: COLOURS.bar,
          },
        ],
      },
      options: {
        indexAxis: 'y',
        plugins: { legend: { display: false } },
        scales: {
          x: {
            type: 'linear',
            min: 0,
            max: 1,
            title: { display: true, text: 'share of the explained variance' },
          },
          y: { type: 'category' },
        },
      },
    });
  }

  function drawPhase(s) {
    const p = byId('searcher-phase');
    p.dataset.phase = s.phase || '';
    p.dataset.searcher = s.searcher || '';
    p.textContent = s.text || '–';
  }

  // A trial scheduler's decision as a table row, its detail in words.
  function decisionRow(x) {
    const det = x.detail || {};
    const rung = det.rung !== undefined ? det.rung : '';
    let text = '';
    if (x.kind === 'exploit') text = `from ${det.donor} at iteration ${det.donor_iteration}`;
    else if (det.cutoff !== undefined) text = `${num(det.value)} < cutoff ${num(det.cutoff)}`;
    else if (det.median !== undefined) text = `best ${num(det.best)} < median ${num(det.median)}`;
    else if (det.bracket !== undefined) text = `bracket ${det.bracket}`;
    else if (det.max_t !== undefined) text = `reached max_t ${num(det.max_t)}`;
    return make(
      'tr',
      { 'data-trial-id': x.trial_id, 'data-kind': x.kind, 'data-rung': rung },
      make('td', {}, new Date(1000 * x.at_s).toLocaleTimeString()),
      make('td', { class: 'trial' }, x.trial_id),
      make('td', { class: `decision ${x.kind}` }, x.kind),
      make('td', {}, x.scheduler),
      make('td', { class: 'num' }, x.training_iteration),
      make('td', { class: 'num rung' }, rung === '' ? '–' : num(rung)),
      make('td', { class: 'note' }, text),
    );
  }

  function drawDecisions(d) {
    const rows = (d.decisions || []).slice().reverse(); // newest first
    byId('decisions-note').textContent =
      `${d.total} decisions of the ${d.scheduler} scheduler` +
      (d.dropped ? ` (the newest ${rows.length} shown)` : '') +
      (d.total ? '' : ': none yet (kept in memory since this scheduler ran the experiment)');
    byId('decisions').tBodies[0].replaceChildren(...rows.map(decisionRow));
  }

  // The panels' loader: load() fetches the analysis and the decisions and draws every panel,
  // one fetch at a time; again() asks for a load at most once a second, the last call included.
  function panelsLoader(api, section, chart) {
    let busy = false;
    let last = Date.now(),
      timer = null;
    const load = async () => {
      if (busy) {
        again();
        return;
      }
      busy = true;
      try {
        const [cols, decisions] = await Promise.all([
          fetch(`${api}/analysis`, { cache: 'no-store' }).then((r) => r.json()),
          fetch(`${api}/decisions`, { cache: 'no-store' }).then((r) => r.json()),
        ]);
        if (cols.error) throw new Error(cols.error);
        drawPhase(cols.searcher || {});
        drawHistory(cols, chart);
        drawParallel(cols, chart);
        drawImportance(cols.importance || {}, chart);
        if (!decisions.error) drawDecisions(decisions);
        section.dataset.trials = cols.n;
        section.dataset.name = cols.experiment;
        section.dataset.loadedAt = Date.now();
      } catch (e) {
        byId('analysis-error').textContent = String(e.message || e);
      } finally {
        busy = false;
      }
    };
    const again = () => {
      const wait = last + 1000 - Date.now();
      if (timer) return;
      timer = setTimeout(
        () => {
          timer = null;
          last = Date.now();
          load();
        },
        Math.max(wait, 0),
      );
    };
    const loadNow = () => {
      last = Date.now();
      load();
    };
    return { again, loadNow };
  }

  function experimentPanels() {
    const journal = decodeURIComponent(location.pathname.replace(/^\/experiments\//, ''));
    const api = `/api/experiments/${encodeURIComponent(journal)}`;
    const available = typeof Chart !== 'undefined';
    const section = byId('analysis');
    if (!section) return;
    if (!available) {
      for (const id of ['history', 'parallel', 'importance']) byId(id).hidden = true;
    }
    const { again, loadNow } = panelsLoader(api, section, chartDrawer(available));
    document.addEventListener('tunebus:event', (e) => {
      const { kind, data } = e.detail || {};
      if (
        kind === 'hello' ||
        kind === 'reset' ||
        (data &&
          (data.experiment === journal ||
            journal.startsWith(`${data.experiment}-`) ||
            data.experiment === section.dataset.name))
      ) {
        again();
      }
    });
    // The first load waits (at most 3 s) for the trial table's first page: with 10,000 trials
    // the analysis is the page's largest answer, and the table is what the page shows first.
    const tableDrawn = () => (byId('page-info') || {}).textContent;
    const started = Date.now();
    const firstLoad = () => {
      if (tableDrawn() || Date.now() - started > 3000) {
        loadNow();
        return;
      }
      setTimeout(firstLoad, 50);
    };
    firstLoad();
  }

  document.addEventListener('DOMContentLoaded', () => {
    if (document.body.dataset.page === 'experiment') experimentPanels();
  });
  return { progress, duration, bestSoFar };
})();
