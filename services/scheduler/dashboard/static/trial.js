// One trial's page (/experiments/NAME/trials/ID, docs/how-to/dashboard.md "One trial"): its config,
// status and error, its results as a table and a chart, its checkpoints with their export, and
// the tails of its stdout and stderr. Uses dashboard.js's helpers (el, fmt, getJson, throttle,
// connectEvents, ...), loaded before it. Live: the trial's events on /events update the summary
// and the chart at once, and refetch the rest at most once a second. Read-only.
'use strict';

// Rows of the results table per page.
const RESULTS_PAGE = 50;

class TrialPage {
  constructor() {
    const m = location.pathname.match(/^\/experiments\/([^/]+)\/trials\/([^/]+)/);
    this.journal = decodeURIComponent(m[1]);
    this.trialId = decodeURIComponent(m[2]);
    this.api = `/api/experiments/${encodeURIComponent(this.journal)}/trials/${encodeURIComponent(this.trialId)}`;
    this.info = null; // the trial API's answer: {experiment, journal, metric, mode, trial, error_text}
    this.offset = null; // the results table's first row; null: the newest RESULTS_PAGE rows
    this.shown = 0; // the first row the table shows
    this.points = []; // the chart's results: {training_iteration, time_total_s, numeric keys}
    this.chart = null;
    this.chartsAvailable = false;
    this.pickedY = ''; // the chart's y key the user picked ('' = the metric)
    this.everything = [
      () => this.loadTrial(),
      () => this.loadCurve(),
      () => this.loadResults(),
      () => this.loadCheckpoints(),
      () => this.loadLog('stdout'),
      () => this.loadLog('stderr'),
    ];
    // What an event may have changed (the chart grows from the event itself).
    this.reload = throttle(
      () =>
        this.load([
          () => this.loadTrial(),
          () => this.loadCheckpoints(),
          () => this.loadLog('stdout'),
          () => this.loadLog('stderr'),
          ...(this.offset === null ? [() => this.loadResults()] : []),
        ]),
      1000,
    );
  }

  metric() {
    return this.info ? this.info.metric : '';
  }

  start() {
    $('crumb').textContent = this.trialId;
    $('crumb-experiment').textContent = this.journal;
    $('crumb-experiment').href = `/experiments/${encodeURIComponent(this.journal)}`;
    $('title').textContent = this.trialId;
    document.title = `tunebus · ${this.trialId}`;
    this.chartsAvailable = chartsAvailable('trial-chart');
    connectEvents(
      (kind, data) => this.onEvent(kind, data),
      () => this.load(this.everything),
    );
    this.listenToControls();
    this.load(this.everything);
  }

  listenToControls() {
    $('chart-x').addEventListener('change', () => this.drawChart());
    $('chart-y').addEventListener('change', () => {
      this.pickedY = $('chart-y').value;
      this.drawChart();
    });
    const page = (offset) => {
      this.offset = offset;
      this.load([() => this.loadResults()]);
    };
    $('results-first').addEventListener('click', () => page(0));
    $('results-prev').addEventListener('click', () => page(Math.max(0, this.shown - RESULTS_PAGE)));
    $('results-next').addEventListener('click', () => page(this.shown + RESULTS_PAGE));
    $('results-last').addEventListener('click', () => page(null));
  }

  onEvent(kind, data) {
    if (kind === 'reset') {
      this.reload();
      return;
    }
    if (data.trial_id !== this.trialId || !this.info) return;
    if (data.experiment !== this.info.experiment && data.experiment !== this.info.journal) return;
    if (kind === 'trial_result' && data.trial && data.trial.last_result)
      this.addPoint(data.trial.last_result);
    this.reload();
  }

  // Runs the loaders `parts` at once; the first error is shown, none clears it.
  async load(parts) {
    try {
      await Promise.all(parts.map((f) => f()));
      showError(null);
    } catch (e) {
      showError(e);
    }
  }

  // ---- summary, config and error

  async loadTrial() {
    const info = await getJson(this.api);
    this.info = info;
    $('crumb-experiment').textContent = info.experiment;
    this.renderTrial(info);
    if (this.points.length) this.drawChart(); // the metric is known now
  }

  renderTrial(info) {
    const t = info.trial;
    const r = t.last_result || {};
    $('summary').replaceChildren(
      card('status', statusCell(t.status), 'trial-status'),
      card('iteration', fmt(t.training_iteration), 'trial-iteration'),
      card(
        info.metric ? `${info.metric} (${info.mode})` : 'metric',
        fmt(r[info.metric]),
        'trial-metric',
      ),
      card('time_total_s', `${fmt(t.time_total_s)} s`, 'trial-time'),
      card(
        'last result (local)',
        r.timestamp ? new Date(1000 * r.timestamp).toLocaleString() : '–',
      ),
      card('attempt', fmt(t.attempt)),
      card('num_failures', fmt(t.num_failures), 'trial-failures'),
      card('worker', t.worker || '–'),
      card('checkpoints', fmt((t.checkpoints || []).length)),
    );
    $('config').textContent = JSON.stringify(t.config, null, 2);
    const failed = Boolean(t.error) || Boolean(info.error_text) || (t.failures || []).length > 0;
    $('trial-error').hidden = !failed;
    if (failed) this.renderError(info);
  }

  // The error section: the trial's error, error.txt's tail and the table of its failures.
  renderError(info) {
    const t = info.trial;
    $('error-summary').textContent = t.error
      ? `${t.status}: ${t.error}`
      : `${t.status}; earlier attempts failed`;
    $('error-path').textContent = `${t.dir}/error.txt`;
    $('error-text').textContent = info.error_text || '(no error.txt in the trial folder)';
    $('failures').tBodies[0].replaceChildren(
      ...(t.failures || []).map((f) =>
        el(
          'tr',
          {},
          el('td', { class: 'num' }, fmt(f.attempt)),
          el('td', {}, f.kind),
          el('td', {}, statusCell(f.then)),
          el('td', {}, f.error),
        ),
      ),
    );
  }

  // ---- the chart: a numeric key against training_iteration or time_total_s

  // The numeric keys of the results (the y choices): the metric first, picked until the user
  // picks another.
  fillKeys() {
    const metric = this.metric();
    const keys = new Set();
    for (const p of this.points) for (const k of Object.keys(p)) keys.add(k);
    const sorted = [...keys].filter((k) => k !== metric).sort();
    if (keys.has(metric)) sorted.unshift(metric);
    const select = $('chart-y');
    if ([...select.options].map((o) => o.value).join() !== sorted.join()) {
      select.replaceChildren(...sorted.map((k) => el('option', { value: k }, k)));
    }
    const want = this.pickedY || metric;
    select.value = sorted.includes(want) ? want : sorted[0] || '';
  }

  drawChart() {
    if (!this.chartsAvailable) return;
    this.fillKeys();
    const x = $('chart-x').value;
    const y = $('chart-y').value;
    const data = this.points
      .filter((p) => typeof p[x] === 'number' && typeof p[y] === 'number')
      .map((p) => ({ x: p[x], y: p[y] }));
    $('chart-title').textContent = y ? `${y} vs ${x}` : '';
    $('chart-note').textContent = data.length ? '' : 'no result with these keys yet';
    const dataset = lineDataset(this.trialId, data, PALETTE[0]);
    this.chart = drawLineChart(this.chart, $('trial-chart'), [dataset], x, y);
  }

  async loadCurve() {
    const curve = await getJson(`${this.api}/curve`);
    // Results the event stream added meanwhile may be newer than the file holds yet.
    const last = curve.points.length
      ? curve.points[curve.points.length - 1].training_iteration
      : -1;
    const newer = this.points.filter((p) => p.training_iteration > last);
    this.points = curve.points.concat(newer);
    this.drawChart();
  }

  // A result from the event stream: its finite numbers become the chart's newest point when its
  // training_iteration is newer than the last point's.
  addPoint(result) {
    const last = this.points.length ? this.points[this.points.length - 1].training_iteration : -1;
    if (typeof result.training_iteration !== 'number' || result.training_iteration <= last) return;
    const p = {};
    for (const [k, v] of Object.entries(result))
      if (typeof v === 'number' && Number.isFinite(v)) p[k] = v;
    this.points.push(p);
    this.drawChart();
  }

  // ---- the results table

  async loadResults() {
    const params = new URLSearchParams({ limit: RESULTS_PAGE });
    if (this.offset !== null) params.set('offset', this.offset);
    const page = await getJson(`${this.api}/results?${params}`);
    const cols = page.columns;
    $('results').tHead.rows[0].replaceChildren(...cols.map((c) => el('th', { 'data-key': c }, c)));
    $('results').tBodies[0].replaceChildren(...page.rows.map((row) => resultRow(row, cols)));
    const end = page.offset + page.rows.length;
    $('results-info').textContent = page.total
      ? `rows ${page.offset + 1}–${end} of ${page.total}${page.truncated ? ' (result.json read up to 64 MiB)' : ''}`
      : 'no result yet';
    $('results-prev').disabled = $('results-first').disabled = page.offset === 0;
    $('results-next').disabled = $('results-last').disabled = end >= page.total;
    this.shown = page.offset;
  }

  // ---- checkpoints

  async loadCheckpoints() {
    const c = await getJson(`${this.api}/checkpoints`);
    $('checkpoints').tBodies[0].replaceChildren(
      ...c.checkpoints.map((k) => checkpointRow(k, this.api)),
    );
    $('checkpoints-info').textContent = c.checkpoints.length
      ? `${c.checkpoints.length} kept`
      : 'none stored';
    const refused = c.not_stored || [];
    $('not-stored').hidden = refused.length === 0;
    $('not-stored').textContent = refused.length
      ? `Not stored (the checkpoint-store refused them): ${refused.map((r) => `iteration ${r.training_iteration}: ${r.reason}`).join('; ')}`
      : '';
  }

  // ---- stdout and stderr

  async loadLog(stream) {
    const box = $(stream);
    const atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
    const log = await getJson(`${this.api}/logs?stream=${stream}`);
    box.textContent = log.exists ? log.text : '';
    $(`${stream}-info`).textContent = log.exists
      ? (log.offset > 0
          ? `last ${bytesText(log.size - log.offset)} of ${bytesText(log.size)}`
          : bytesText(log.size)) + ` · ${log.path}`
      : `no ${stream} yet: the trial-worker writes ${log.path} when the trainable starts ` +
        '(a worker on another host, to its own results folder unless it is shared)';
    if (atBottom) box.scrollTop = box.scrollHeight;
  }
}

// A results table row: `row`'s values under the columns `cols` (objects as JSON).
function resultRow(row, cols) {
  const text = (v) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : fmt(v));
  return el(
    'tr',
    { 'data-iteration': row.training_iteration },
    ...cols.map((c) =>
      el('td', { 'data-key': c, class: typeof row[c] === 'number' ? 'num' : null }, text(row[c])),
    ),
  );
}

// A checkpoint's row (CheckpointRows' entry `k`) with its export link under the trial's `api`.
function checkpointRow(k, api) {
  return el(
    'tr',
    { 'data-checkpoint': k.name },
    el('td', { title: k.checkpoint_id }, k.name),
    el('td', { class: 'num' }, fmt(k.training_iteration)),
    el('td', { class: 'num' }, fmt(k.time_total_s)),
    el('td', { class: 'num' }, fmt(k.score)),
    el('td', { class: 'num', title: `${k.size_bytes} bytes` }, bytesText(k.size_bytes)),
    el('td', {}, k.timestamp ? new Date(1000 * k.timestamp).toLocaleString() : '–'),
    el(
      'td',
      {},
      el(
        'a',
        {
          class: 'export',
          href: `${api}/checkpoints/${encodeURIComponent(k.name)}/export`,
          download: '',
        },
        'download .tar',
      ),
    ),
  );
}

// 1234567 -> "1.18 MiB".
function bytesText(n) {
  if (typeof n !== 'number') return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${n.toFixed(2)} ${units[i]}`;
}

function trialPage() {
  new TrialPage().start();
}

document.addEventListener('DOMContentLoaded', () => {
  if (document.body.dataset.page === 'trial') trialPage();
});
