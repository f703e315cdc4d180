// The tunebus dashboard's pages (docs/dashboard.md): the experiments page (/) and one experiment's
// page (/experiments/NAME). Data comes from the scheduler's JSON API (/api/...); live changes from
// its Server-Sent Events (/events), one event per scheduler event. Read-only: no request here
// changes anything.
'use strict';

const STATUSES = ['PENDING', 'RUNNING', 'PAUSED', 'TERMINATED', 'ERROR'];
const EVENT_KINDS = [
  'trial_added',
  'trial_started',
  'trial_result',
  'trial_status',
  'checkpoint_saved',
  'trial_updated',
  'experiment_ended',
  'reset',
];
const PALETTE = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
  '#17becf',
];

const $ = (id) => document.getElementById(id);

// An element with attributes (class, data-*, ...) and children (nodes or text).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('data-'))
      e.dataset[k.slice(5).replace(/-(.)/g, (m, c) => c.toUpperCase())] = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : String(c ?? ''));
  return e;
}

// A number for a table: integers as they are, others with 4 significant digits.
function fmt(v) {
  if (v === null || v === undefined) return '–';
  if (typeof v !== 'number') return typeof v === 'object' ? JSON.stringify(v) : String(v);
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a >= 1e5 || a < 1e-3) ? v.toExponential(3) : String(Number(v.toPrecision(4)));
}

async function getJson(url) {
  const r = await fetch(url, { cache: 'no-store' });
  const body = await r.json().catch(() => ({ error: `${r.status} ${r.statusText}` }));
  if (!r.ok) throw new Error(body.error || `${r.status} ${r.statusText}`);
  return body;
}

function showError(e) {
  const p = $('error');
  if (!e) {
    p.hidden = true;
    return;
  }
  p.textContent = String(e.message || e);
  p.hidden = false;
}

// Runs fn at most once per `ms`, the last call included (trailing).
function throttle(fn, ms) {
  let last = 0,
    timer = null;
  return () => {
    const wait = last + ms - Date.now();
    if (wait <= 0 && !timer) {
      last = Date.now();
      fn();
      return;
    }
    if (!timer)
      timer = setTimeout(
        () => {
          timer = null;
          last = Date.now();
          fn();
        },
        Math.max(wait, 0),
      );
  };
}

// The event stream: `onEvent(kind, data)` per event, `onHello()` when (re)connected and
// subscribed (the page refetches then: it may have missed events while it was not).
// A page the browser leaves closes its stream (pagehide) and opens a new one if the browser
// brings it back from its back/forward cache (pageshow): a left page's open stream would hold
// one of the 6 connections a browser keeps per host, and six of them stall the next page's
// loads until the browser evicts the left pages.
function connectEvents(onEvent, onHello) {
  const live = $('live');
  // charts.js (the analysis panels) listens to the same stream through document events.
  const relay = (kind, data) =>
    document.dispatchEvent(new CustomEvent('tunebus:event', { detail: { kind, data } }));
  let es = null;
  const open = () => {
    es = new EventSource('/events');
    es.addEventListener('hello', () => {
      live.textContent = 'live';
      live.className = 'live on';
      onHello();
      relay('hello', {});
    });
    es.onerror = () => {
      live.textContent = 'reconnecting…';
      live.className = 'live off';
    };
    for (const kind of EVENT_KINDS) {
      es.addEventListener(kind, (m) => {
        const data = JSON.parse(m.data);
        onEvent(kind, data);
        relay(kind, data);
      });
    }
  };
  window.addEventListener('pagehide', () => {
    if (es) es.close();
    es = null;
    live.textContent = 'connecting…';
    live.className = 'live off';
  });
  window.addEventListener('pageshow', (e) => {
    if (e.persisted && !es) open();
  });
  open();
}

function statusCell(status) {
  return el('span', { class: `status ${status}` }, status || '–');
}

function countsText(counts) {
  return STATUSES.filter((s) => (counts || {})[s] > 0)
    .map((s) => `${s} ${counts[s]}`)
    .join(' · ');
}

// ---------------------------------------------------------------- the experiments page

function experimentsPage() {
  const load = async () => {
    try {
      const rows = await getJson('/api/experiments');
      const body = $('experiments').tBodies[0];
      body.replaceChildren(
        ...rows.map((x) => {
          const finished = STATUSES.slice(3).reduce((n, s) => n + ((x.counts || {})[s] || 0), 0);
          return el(
            'tr',
            { 'data-journal': x.journal },
            el(
              'td',
              {},
              el('a', { href: `/experiments/${encodeURIComponent(x.journal)}` }, x.name),
            ),
            el('td', { class: 'note' }, x.journal),
            el('td', {}, statusCell(x.status)),
            el('td', { class: 'num' }, `${finished}/${x.total}`),
            el(
              'td',
              { class: 'progress-cell' },
              typeof tunebusCharts === 'undefined' ? '' : tunebusCharts.progress(x.progress),
            ),
            el('td', { class: 'counts' }, countsText(x.counts)),
            el(
              'td',
              { class: 'num best' },
              x.best_metric === null ? '–' : `${fmt(x.best_metric)} (${x.metric}, ${x.mode})`,
            ),
            el('td', {}, x.best_trial_id || '–'),
            el('td', { class: 'num' }, x.weight === undefined ? '–' : fmt(x.weight)),
            el(
              'td',
              { class: 'num' },
              x.share === undefined ? '–' : `${(100 * x.share).toFixed(0)}%`,
            ),
            el('td', {}, x.submitted_at ? new Date(1000 * x.submitted_at).toLocaleString() : '–'),
          );
        }),
      );
      $('empty').hidden = rows.length > 0;
      $('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
      showError(null);
    } catch (e) {
      showError(e);
    }
  };
  const reload = throttle(load, 500);
  connectEvents(
    () => reload(),
    () => reload(),
  );
  load();
}

// ---------------------------------------------------------------- one experiment's page

// The trial table's query in the page's address (a link to a sorted or filtered table).
function pageQuery() {
  const p = new URLSearchParams(location.search);
  const offset = Math.max(0, parseInt(p.get('offset') || '0', 10) || 0);
  return { status: p.get('status') || '', offset, limit: 25, sort: p.get('sort') || '' };
}

function experimentPage() {
  const journal = decodeURIComponent(location.pathname.replace(/^\/experiments\//, ''));
  const api = `/api/experiments/${encodeURIComponent(journal)}`;
  const state = {
    summary: null,
    query: pageQuery(), // the table's first query may come from the address (pageQuery)
    configKeys: null, // the table's config columns, from the first page
    selected: new Set(), // trials whose curves are drawn
    curves: new Map(), // trial_id -> [{x: training_iteration, y: metric}]
    live: new Map(), // trial_id -> the trial as its newest event showed it
    chart: null,
  };
  $('crumb').textContent = journal;
  $('status-filter').value = state.query.status;
  const metric = () => (state.summary ? state.summary.metric : '');

  const chartsAvailable = typeof Chart !== 'undefined';
  if (!chartsAvailable) {
    $('chart-note').textContent =
      'Charts are unavailable: this build of the scheduler has no ' +
      'Chart.js (Debian package libjs-chart.js; rebuild with it installed).';
    $('curve').hidden = true;
  }

  const drawChart = () => {
    if (!chartsAvailable) return;
    // x: training_iteration, or time_total_s (the toggle); points keep both (x and t).
    const xKey = $('curve-x') ? $('curve-x').value : 'training_iteration';
    const byTime = xKey === 'time_total_s';
    const datasets = [...state.selected].map((id, i) => ({
      label: id,
      data: (state.curves.get(id) || [])
        .filter((p) => !byTime || typeof p.t === 'number')
        .map((p) => (byTime ? { x: p.t, y: p.y } : p)),
      borderColor: PALETTE[i % PALETTE.length],
      backgroundColor: PALETTE[i % PALETTE.length],
      borderWidth: 2,
      pointRadius: 2,
      fill: false,
    }));
    $('chart-metric').textContent = `${metric()} vs ${xKey}`;
    if (!state.chart) {
      state.chart = new Chart($('curve'), {
        type: 'line',
        data: { datasets },
        options: {
          animation: false,
          maintainAspectRatio: false,
          parsing: false,
          scales: {
            x: { type: 'linear', title: { display: true, text: xKey } },
            y: { type: 'linear', title: { display: true, text: metric() } },
          },
        },
      });
    } else {
      state.chart.data.datasets = datasets;
      state.chart.options.scales.y.title.text = metric();
      state.chart.options.scales.x.title.text = xKey;
      state.chart.update('none');
    }
    $('chart-note').textContent = state.selected.size
      ? ''
      : 'Tick trials in the table to draw their curves.';
  };

  const loadCurve = async (id) => {
    try {
      const curve = await getJson(`${api}/trials/${encodeURIComponent(id)}/curve`);
      const m = metric();
      const points = curve.points
        .filter((p) => typeof p.training_iteration === 'number' && typeof p[m] === 'number')
        .map((p) => ({ x: p.training_iteration, y: p[m], t: p.time_total_s }));
      // Points the event stream added meanwhile are newer than the file may hold yet.
      const live = (state.curves.get(id) || []).filter(
        (p) => !points.length || p.x > points[points.length - 1].x,
      );
      state.curves.set(id, points.concat(live));
      drawChart();
    } catch (e) {
      showError(e);
    }
  };

  const toggle = (id, on) => {
    if (on) {
      state.selected.add(id);
      loadCurve(id);
    } else {
      state.selected.delete(id);
    }
    drawChart();
  };

  const columns = () => {
    const cols = [
      { key: null, label: '' },
      { key: 'trial_id', label: 'trial' },
      { key: 'status', label: 'status' },
      { key: 'training_iteration', label: 'iter', num: true },
      { key: 'metric', label: metric() || 'metric', num: true },
      { key: 'time_total_s', label: 'time (s)', num: true },
    ];
    for (const k of state.configKeys || [])
      cols.push({ key: `config.${k}`, label: k, num: true, config: k });
    return cols;
  };

  // The cells of a trial's row, by column.
  const cells = (t) =>
    columns().map((c) => {
      if (c.key === null) {
        const box = el('input', { type: 'checkbox', 'aria-label': `draw ${t.trial_id}` });
        box.checked = state.selected.has(t.trial_id);
        box.addEventListener('change', () => toggle(t.trial_id, box.checked));
        return el('td', {}, box);
      }
      if (c.key === 'trial_id') {
        const href = `/experiments/${encodeURIComponent(journal)}/trials/${encodeURIComponent(t.trial_id)}`;
        return el('td', { class: 'trial_id' }, el('a', { href }, t.trial_id));
      }
      if (c.key === 'status') return el('td', { class: 'status-cell' }, statusCell(t.status));
      if (c.key === 'metric')
        return el('td', { class: 'num metric' }, fmt((t.last_result || {})[metric()]));
      if (c.config) return el('td', { class: 'num config' }, fmt((t.config || {})[c.config]));
      return el('td', { class: c.num ? `num ${c.key}` : c.key }, fmt(t[c.key]));
    });

  const renderHeader = () => {
    const row = $('trials').tHead.rows[0];
    row.replaceChildren(
      ...columns().map((c) => {
        if (!c.key) return el('th', {});
        const sort = state.query.sort;
        const arrow = sort === c.key ? ' ▲' : sort === `-${c.key}` ? ' ▼' : '';
        const th = el('th', { 'data-sort': c.key, class: c.num ? 'num' : null }, c.label + arrow);
        th.addEventListener('click', () => {
          state.query.sort = sort === c.key ? `-${c.key}` : sort === `-${c.key}` ? '' : c.key;
          state.query.offset = 0;
          loadTrials();
        });
        return th;
      }),
    );
  };

  const trialsUrl = () => {
    const q = state.query;
    return `${api}/trials?${new URLSearchParams({ offset: q.offset, limit: q.limit, sort: q.sort, status: q.status })}`;
  };
  // Trial-page requests are numbered as they are asked; the table shows an answer only if no
  // later-asked one is shown already, so an answer that arrives late (a reload asked before a
  // sort click, or the first page) never replaces the newer query's rows.
  let asked = 0,
    shown = 0;
  const askTrials = () => ({ number: ++asked, answer: getJson(trialsUrl()) });
  // `request`: one askTrials() made already (the first page, asked with the summary).
  const loadTrials = async (request) => {
    const q = state.query;
    const { number, answer } = request || askTrials();
    try {
      const page = await answer;
      if (number < shown) return;
      shown = number;
      if (state.configKeys === null && page.trials.length) {
        state.configKeys = Object.keys(page.trials[0].config || {})
          .filter((k) => typeof page.trials[0].config[k] !== 'object')
          .slice(0, 6);
      }
      renderHeader();
      // A page fetched before a result's event may arrive after it: a row never goes back to
      // an older iteration than the event already showed.
      const iter = (t) => ((t && t.last_result) || {}).training_iteration ?? -1;
      const newest = (t) => {
        const live = state.live.get(t.trial_id);
        if (live && iter(live) > iter(t)) return live;
        state.live.delete(t.trial_id);
        return t;
      };
      $('trials').tBodies[0].replaceChildren(
        ...page.trials
          .map(newest)
          .map((t) => el('tr', { 'data-trial-id': t.trial_id }, ...cells(t))),
      );
      const last = Math.min(q.offset + q.limit, page.total);
      $('page-info').textContent = page.total
        ? `${q.offset + 1}–${last} of ${page.total}`
        : 'no trials';
      $('prev').disabled = q.offset === 0;
      $('next').disabled = last >= page.total;
      showError(null);
    } catch (e) {
      showError(e);
    }
  };

  const renderSummary = (s) => {
    document.title = `tunebus · ${s.name}`;
    $('title').textContent = s.name;
    const card = (label, value, cls) =>
      el(
        'div',
        { class: 'card' },
        el('div', { class: 'label' }, label),
        el('div', { class: `value ${cls || ''}` }, value),
      );
    const counts = s.counts || {};
    $('summary').replaceChildren(
      card('status', statusCell(s.status)),
      card('trials', `${s.created}${s.total > 0 ? ` of ${s.total}` : ''}`),
      ...STATUSES.map((st) => card(st.toLowerCase(), counts[st] || 0, `count-${st}`)),
      card('metric', `${s.metric} (${s.mode})`),
      card('elapsed', `${fmt(s.elapsed_s)} s`),
      ...(s.weight === undefined
        ? []
        : [card('weight · share', `${fmt(s.weight)} · ${(100 * (s.share || 0)).toFixed(0)}%`)]),
    );
    const b = s.best;
    $('best').replaceChildren(
      b
        ? el(
            'span',
            { id: 'best-trial', 'data-trial-id': b.trial_id },
            `${b.trial_id}: ${s.metric} = ${fmt((b.last_result || {})[s.metric])} at iteration ${fmt(b.training_iteration)} · config ${JSON.stringify(b.config)}`,
          )
        : el('span', { class: 'note' }, 'no trial has reported the metric yet'),
    );
  };

  const loadSummary = async () => {
    try {
      const s = await getJson(api);
      state.summary = s;
      renderSummary(s);
      if (state.selected.size === 0 && s.best) toggle(s.best.trial_id, true);
      else drawChart();
    } catch (e) {
      showError(e);
    }
  };

  const reloadAll = throttle(() => {
    loadSummary();
    loadTrials();
  }, 1000);

  // A trial_result: its row (when on this page) and its curve (when drawn) at once; the counts,
  // order and best follow with the next (throttled) reload.
  const applyTrial = (kind, data) => {
    const t = data.trial;
    if (!t) return;
    state.live.set(t.trial_id, t);
    const tr = document.querySelector(`#trials tr[data-trial-id="${CSS.escape(t.trial_id)}"]`);
    if (tr) tr.replaceChildren(...cells(t));
    if (kind === 'trial_result' && state.selected.has(t.trial_id)) {
      const r = t.last_result || {};
      const x = r.training_iteration,
        y = r[metric()];
      const points = state.curves.get(t.trial_id) || [];
      if (
        typeof x === 'number' &&
        typeof y === 'number' &&
        (!points.length || x > points[points.length - 1].x)
      ) {
        points.push({ x, y, t: r.time_total_s });
        state.curves.set(t.trial_id, points);
        drawChart();
      }
    }
  };

  connectEvents(
    (kind, data) => {
      if (kind === 'reset') {
        reloadAll();
        return;
      }
      if (!state.summary || data.experiment !== state.summary.name) return;
      applyTrial(kind, data);
      reloadAll();
    },
    () => reloadAll(),
  );

  if ($('curve-x')) $('curve-x').addEventListener('change', drawChart);
  $('status-filter').addEventListener('change', (e) => {
    state.query.status = e.target.value;
    state.query.offset = 0;
    loadTrials();
  });
  $('prev').addEventListener('click', () => {
    state.query.offset = Math.max(0, state.query.offset - state.query.limit);
    loadTrials();
  });
  $('next').addEventListener('click', () => {
    state.query.offset += state.query.limit;
    loadTrials();
  });
  const firstPage = askTrials(); // asked at once with the summary
  firstPage.answer.catch(() => {}); // loadTrials reports its error
  loadSummary().then(() => loadTrials(firstPage));
}

document.addEventListener('DOMContentLoaded', () => {
  if (document.body.dataset.page === 'experiment') experimentPage();
  else if (document.body.dataset.page === 'experiments') experimentsPage();
});
