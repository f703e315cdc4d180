// The tunebus dashboard's pages (docs/how-to/dashboard.md): the experiments page (/) and one experiment's
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

// A summary card: its label above its value (text or a node); `cls` adds classes to the value.
function card(label, value, cls) {
  return el(
    'div',
    { class: 'card' },
    el('div', { class: 'label' }, label),
    el('div', { class: `value ${cls || ''}` }, value),
  );
}

// Whether Chart.js is loaded; without it #chart-note says so and the canvas `canvasId` is hidden.
function chartsAvailable(canvasId) {
  if (typeof Chart !== 'undefined') return true;
  $('chart-note').textContent =
    'Charts are unavailable: this build of the scheduler has no ' +
    'Chart.js (Debian package libjs-chart.js; rebuild with it installed).';
  $(canvasId).hidden = true;
  return false;
}

// One line of a chart: `data` as [{x, y}] drawn in `color`.
function lineDataset(label, data, color) {
  return {
    label,
    data,
    borderColor: color,
    backgroundColor: color,
    borderWidth: 2,
    pointRadius: 2,
    fill: false,
  };
}

// `chart` (a Chart.js line chart on linear axes) redrawn with `datasets` and its axes titled
// `xTitle` and `yTitle`, without animation; null `chart`: a new one on `canvas`. Returns it.
function drawLineChart(chart, canvas, datasets, xTitle, yTitle) {
  if (chart) {
    chart.data.datasets = datasets;
    chart.options.scales.x.title.text = xTitle;
    chart.options.scales.y.title.text = yTitle;
    chart.update('none');
    return chart;
  }
  return new Chart(canvas, {
    type: 'line',
    data: { datasets },
    options: {
      animation: false,
      maintainAspectRatio: false,
      parsing: false,
      scales: {
        x: { type: 'linear', title: { display: true, text: xTitle } },
        y: { type: 'linear', title: { display: true, text: yTitle } },
      },
    },
  });
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

// One experiment's page: its summary, its trial table (a page of the trials, sorted and
// filtered by the server) and the curves of the trials ticked in the table, kept current by the
// event stream.
class ExperimentPage {
  constructor() {
    this.journal = decodeURIComponent(location.pathname.replace(/^\/experiments\//, ''));
    this.api = `/api/experiments/${encodeURIComponent(this.journal)}`;
    this.summary = null;
    this.query = pageQuery(); // the table's first query may come from the address (pageQuery)
    this.configKeys = null; // the table's config columns, from the first page
    this.selected = new Set(); // trials whose curves are drawn
    this.curves = new Map(); // trial_id -> [{x: training_iteration, y: metric, t: time_total_s}]
    this.live = new Map(); // trial_id -> the trial as its newest event showed it
    this.chart = null;
    this.chartsAvailable = false;
    // Trial-page requests are numbered as they are asked; the table shows an answer only if no
    // later-asked one is shown already, so an answer that arrives late (a reload asked before a
    // sort click, or the first page) never replaces the newer query's rows.
    this.asked = 0;
    this.shown = 0;
    this.reloadAll = throttle(() => {
      this.loadSummary();
      this.loadTrials();
    }, 1000);
  }

  metric() {
    return this.summary ? this.summary.metric : '';
  }

  start() {
    $('crumb').textContent = this.journal;
    $('status-filter').value = this.query.status;
    this.chartsAvailable = chartsAvailable('curve');
    connectEvents(
      (kind, data) => this.onEvent(kind, data),
      () => this.reloadAll(),
    );
    this.listenToControls();
    const firstPage = this.askTrials(); // asked at once with the summary
    firstPage.answer.catch(() => {}); // loadTrials reports its error
    this.loadSummary().then(() => this.loadTrials(firstPage));
  }

  listenToControls() {
    if ($('curve-x')) $('curve-x').addEventListener('change', () => this.drawChart());
    $('status-filter').addEventListener('change', (e) => {
      this.query.status = e.target.value;
      this.query.offset = 0;
      this.loadTrials();
    });
    $('prev').addEventListener('click', () => {
      this.query.offset = Math.max(0, this.query.offset - this.query.limit);
      this.loadTrials();
    });
    $('next').addEventListener('click', () => {
      this.query.offset += this.query.limit;
      this.loadTrials();
    });
  }

  onEvent(kind, data) {
    if (kind === 'reset') {
      this.reloadAll();
      return;
    }
    if (!this.summary || data.experiment !== this.summary.name) return;
    this.applyTrial(kind, data);
    this.reloadAll();
  }

  // ---- the curves

  drawChart() {
    if (!this.chartsAvailable) return;
    // x: training_iteration, or time_total_s (the toggle); points keep both (x and t).
    const xKey = $('curve-x') ? $('curve-x').value : 'training_iteration';
    const byTime = xKey === 'time_total_s';
    const datasets = [...this.selected].map((id, i) =>
      lineDataset(
        id,
        (this.curves.get(id) || [])
          .filter((p) => !byTime || typeof p.t === 'number')
          .map((p) => (byTime ? { x: p.t, y: p.y } : p)),
        PALETTE[i % PALETTE.length],
      ),
    );
    $('chart-metric').textContent = `${this.metric()} vs ${xKey}`;
    this.chart = drawLineChart(this.chart, $('curve'), datasets, xKey, this.metric());
    $('chart-note').textContent = this.selected.size
      ? ''
      : 'Tick trials in the table to draw their curves.';
  }

  async loadCurve(id) {
    try {
      const curve = await getJson(`${this.api}/trials/${encodeURIComponent(id)}/curve`);
      const m = this.metric();
      const points = curve.points
        .filter((p) => typeof p.training_iteration === 'number' && typeof p[m] === 'number')
        .map((p) => ({ x: p.training_iteration, y: p[m], t: p.time_total_s }));
      // Points the event stream added meanwhile are newer than the file may hold yet.
      const live = (this.curves.get(id) || []).filter(
        (p) => !points.length || p.x > points[points.length - 1].x,
      );
      this.curves.set(id, points.concat(live));
      this.drawChart();
    } catch (e) {
      showError(e);
    }
  }

  toggle(id, on) {
    if (on) {
      this.selected.add(id);
      this.loadCurve(id);
    } else {
      this.selected.delete(id);
    }
    this.drawChart();
  }

  // ---- the trial table

  columns() {
    const cols = [
      { key: null, label: '' },
      { key: 'trial_id', label: 'trial' },
      { key: 'status', label: 'status' },
      { key: 'training_iteration', label: 'iter', num: true },
      { key: 'metric', label: this.metric() || 'metric', num: true },
      { key: 'time_total_s', label: 'time (s)', num: true },
    ];
    for (const k of this.configKeys || [])
      cols.push({ key: `config.${k}`, label: k, num: true, config: k });
    return cols;
  }

  // The cells of a trial's row, by column.
  cells(t) {
    return this.columns().map((c) => this.cell(t, c));
  }

  cell(t, c) {
    if (c.key === null) {
      const box = el('input', { type: 'checkbox', 'aria-label': `draw ${t.trial_id}` });
      box.checked = this.selected.has(t.trial_id);
      box.addEventListener('change', () => this.toggle(t.trial_id, box.checked));
      return el('td', {}, box);
    }
    if (c.key === 'trial_id') {
      const href = `/experiments/${encodeURIComponent(this.journal)}/trials/${encodeURIComponent(t.trial_id)}`;
      return el('td', { class: 'trial_id' }, el('a', { href }, t.trial_id));
    }
    if (c.key === 'status') return el('td', { class: 'status-cell' }, statusCell(t.status));
    if (c.key === 'metric')
      return el('td', { class: 'num metric' }, fmt((t.last_result || {})[this.metric()]));
    if (c.config) return el('td', { class: 'num config' }, fmt((t.config || {})[c.config]));
    return el('td', { class: c.num ? `num ${c.key}` : c.key }, fmt(t[c.key]));
  }

  renderHeader() {
    const row = $('trials').tHead.rows[0];
    row.replaceChildren(...this.columns().map((c) => this.headerCell(c)));
  }

  // A column's header: a click sorts by it (ascending, descending, then unsorted).
  headerCell(c) {
    if (!c.key) return el('th', {});
    const sort = this.query.sort;
    const arrow = sort === c.key ? ' ▲' : sort === `-${c.key}` ? ' ▼' : '';
    const th = el('th', { 'data-sort': c.key, class: c.num ? 'num' : null }, c.label + arrow);
    th.addEventListener('click', () => {
      this.query.sort = sort === c.key ? `-${c.key}` : sort === `-${c.key}` ? '' : c.key;
      this.query.offset = 0;
      this.loadTrials();
    });
    return th;
  }

  trialsUrl() {
    const q = this.query;
    return `${this.api}/trials?${new URLSearchParams({ offset: q.offset, limit: q.limit, sort: q.sort, status: q.status })}`;
  }

  askTrials() {
    return { number: ++this.asked, answer: getJson(this.trialsUrl()) };
  }

  // `request`: one askTrials() made already (the first page, asked with the summary).
  async loadTrials(request) {
    const q = this.query;
    const { number, answer } = request || this.askTrials();
    try {
      const page = await answer;
      if (number < this.shown) return;
      this.shown = number;
      if (this.configKeys === null && page.trials.length) {
        this.configKeys = Object.keys(page.trials[0].config || {})
          .filter((k) => typeof page.trials[0].config[k] !== 'object')
          .slice(0, 6);
      }
      this.renderHeader();
      $('trials').tBodies[0].replaceChildren(
        ...page.trials
          .map((t) => this.newest(t))
          .map((t) => el('tr', { 'data-trial-id': t.trial_id }, ...this.cells(t))),
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
  }

  // A page fetched before a result's event may arrive after it: a row never goes back to an
  // older iteration than the event already showed.
  newest(t) {
    const iter = (x) => ((x && x.last_result) || {}).training_iteration ?? -1;
    const live = this.live.get(t.trial_id);
    if (live && iter(live) > iter(t)) return live;
    this.live.delete(t.trial_id);
    return t;
  }

  // A trial's event: its row (when on this page) and its curve (when drawn) at once; the counts,
  // order and best follow with the next (throttled) reload.
  applyTrial(kind, data) {
    const t = data.trial;
    if (!t) return;
    this.live.set(t.trial_id, t);
    const tr = document.querySelector(`#trials tr[data-trial-id="${CSS.escape(t.trial_id)}"]`);
    if (tr) tr.replaceChildren(...this.cells(t));
    if (kind === 'trial_result' && this.selected.has(t.trial_id)) this.extendCurve(t);
  }

  // Adds the trial's last result to its drawn curve when it is newer than the curve's end.
  extendCurve(t) {
    const r = t.last_result || {};
    const x = r.training_iteration,
      y = r[this.metric()];
    const points = this.curves.get(t.trial_id) || [];
    if (
      typeof x === 'number' &&
      typeof y === 'number' &&
      (!points.length || x > points[points.length - 1].x)
    ) {
      points.push({ x, y, t: r.time_total_s });
      this.curves.set(t.trial_id, points);
      this.drawChart();
    }
  }

  // ---- the summary

  renderSummary(s) {
    document.title = `tunebus · ${s.name}`;
    $('title').textContent = s.name;
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
  }

  async loadSummary() {
    try {
      const s = await getJson(this.api);
      this.summary = s;
      this.renderSummary(s);
      if (this.selected.size === 0 && s.best) this.toggle(s.best.trial_id, true);
      else this.drawChart();
    } catch (e) {
      showError(e);
    }
  }
}

function experimentPage() {
  new ExperimentPage().start();
}

document.addEventListener('DOMContentLoaded', () => {
  if (document.body.dataset.page === 'experiment') experimentPage();
  else if (document.body.dataset.page === 'experiments') experimentsPage();
});
