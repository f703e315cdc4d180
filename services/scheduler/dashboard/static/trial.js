// One trial's page (/experiments/NAME/trials/ID, docs/dashboard.md "One trial"): its config,
// status and error, its results as a table and a chart, its checkpoints with their export, and
// the tails of its stdout and stderr. Uses dashboard.js's helpers (el, fmt, getJson, throttle,
// connectEvents, ...), loaded before it. Live: the trial's events on /events update the summary
// and the chart at once, and refetch the rest at most once a second. Read-only.
'use strict';

function trialPage() {
  const m = location.pathname.match(/^\/experiments\/([^/]+)\/trials\/([^/]+)/);
  const journal = decodeURIComponent(m[1]);
  const trialId = decodeURIComponent(m[2]);
  const api = `/api/experiments/${encodeURIComponent(journal)}/trials/${encodeURIComponent(trialId)}`;
  const RESULTS_PAGE = 50;
  const state = {
    info: null, // the trial API's answer: {experiment, journal, metric, mode, trial, error_text}
    offset: null, // the results table's first row; null: the newest RESULTS_PAGE rows
    shown: 0, // the first row the table shows
    points: [], // the chart's results: {training_iteration, time_total_s, numeric keys}
    chart: null,
    pickedY: '', // the chart's y key the user picked ('' = the metric)
  };
  $('crumb').textContent = trialId;
  $('crumb-experiment').textContent = journal;
  $('crumb-experiment').href = `/experiments/${encodeURIComponent(journal)}`;
  $('title').textContent = trialId;
  document.title = `tunebus · ${trialId}`;
  const metric = () => (state.info ? state.info.metric : '');

  // ---- summary, config and error

  const renderTrial = (info) => {
    const t = info.trial;
    const r = t.last_result || {};
    const card = (label, value, cls) =>
      el(
        'div',
        { class: 'card' },
        el('div', { class: 'label' }, label),
        el('div', { class: `value ${cls || ''}` }, value),
      );
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
    if (failed) {
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
  };

  const loadTrial = async () => {
    const info = await getJson(api);
    state.info = info;
    $('crumb-experiment').textContent = info.experiment;
    renderTrial(info);
    if (state.points.length) drawChart(); // the metric is known now
  };

  // ---- the chart: a numeric key against training_iteration or time_total_s

  const chartsAvailable = typeof Chart !== 'undefined';
  if (!chartsAvailable) {
    $('chart-note').textContent =
      'Charts are unavailable: this build of the scheduler has no ' +
      'Chart.js (Debian package libjs-chart.js; rebuild with it installed).';
    $('trial-chart').hidden = true;
  }

  // The numeric keys of the results (the y choices): the metric first, picked until the user
  // picks another.
  const fillKeys = () => {
    const keys = new Set();
    for (const p of state.points) for (const k of Object.keys(p)) keys.add(k);
    const sorted = [...keys].filter((k) => k !== metric()).sort();
    if (keys.has(metric())) sorted.unshift(metric());
    const select = $('chart-y');
    if ([...select.options].map((o) => o.value).join() !== sorted.join()) {
      select.replaceChildren(...sorted.map((k) => el('option', { value: k }, k)));
    }
    const want = state.pickedY || metric();
    select.value = sorted.includes(want) ? want : sorted[0] || '';
  };

  const drawChart = () => {
    if (!chartsAvailable) return;
    fillKeys();
    const x = $('chart-x').value;
    const y = $('chart-y').value;
    const data = state.points
      .filter((p) => typeof p[x] === 'number' && typeof p[y] === 'number')
      .map((p) => ({ x: p[x], y: p[y] }));
    $('chart-title').textContent = y ? `${y} vs ${x}` : '';
    $('chart-note').textContent = data.length ? '' : 'no result with these keys yet';
    const dataset = {
      label: trialId,
      data,
      borderColor: PALETTE[0],
      backgroundColor: PALETTE[0],
      borderWidth: 2,
      pointRadius: 2,
      fill: false,
    };
    if (!state.chart) {
      state.chart = new Chart($('trial-chart'), {
        type: 'line',
        data: { datasets: [dataset] },
        options: {
          animation: false,
          maintainAspectRatio: false,
          parsing: false,
          scales: {
            x: { type: 'linear', title: { display: true, text: x } },
            y: { type: 'linear', title: { display: true, text: y } },
          },
        },
      });
    } else {
      state.chart.data.datasets = [dataset];
      state.chart.options.scales.x.title.text = x;
      state.chart.options.scales.y.title.text = y;
      state.chart.update('none');
    }
  };

  const loadCurve = async () => {
    const curve = await getJson(`${api}/curve`);
    // Results the event stream added meanwhile may be newer than the file holds yet.
    const last = curve.points.length
      ? curve.points[curve.points.length - 1].training_iteration
      : -1;
    const newer = state.points.filter((p) => p.training_iteration > last);
    state.points = curve.points.concat(newer);
    drawChart();
  };

  const addPoint = (result) => {
    const last = state.points.length
      ? state.points[state.points.length - 1].training_iteration
      : -1;
    if (typeof result.training_iteration !== 'number' || result.training_iteration <= last) return;
    const p = {};
    for (const [k, v] of Object.entries(result))
      if (typeof v === 'number' && Number.isFinite(v)) p[k] = v;
    state.points.push(p);
    drawChart();
  };

  // ---- the results table

  const cellText = (v) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : fmt(v));

  const loadResults = async () => {
    const params = new URLSearchParams({ limit: RESULTS_PAGE });
    if (state.offset !== null) params.set('offset', state.offset);
    const page = await getJson(`${api}/results?${params}`);
    const cols = page.columns;
    $('results').tHead.rows[0].replaceChildren(...cols.map((c) => el('th', { 'data-key': c }, c)));
    $('results').tBodies[0].replaceChildren(
      ...page.rows.map((row) =>
        el(
          'tr',
          { 'data-iteration': row.training_iteration },
          ...cols.map((c) =>
            el(
              'td',
              { 'data-key': c, class: typeof row[c] === 'number' ? 'num' : null },
              cellText(row[c]),
            ),
          ),
        ),
      ),
    );
    const end = page.offset + page.rows.length;
    $('results-info').textContent = page.total
      ? `rows ${page.offset + 1}–${end} of ${page.total}${page.truncated ? ' (result.json read up to 64 MiB)' : ''}`
      : 'no result yet';
    $('results-prev').disabled = $('results-first').disabled = page.offset === 0;
    $('results-next').disabled = $('results-last').disabled = end >= page.total;
    state.shown = page.offset;
  };

  // ---- checkpoints

  const loadCheckpoints = async () => {
    const c = await getJson(`${api}/checkpoints`);
    $('checkpoints').tBodies[0].replaceChildren(
      ...c.checkpoints.map((k) =>
        el(
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
        ),
      ),
    );
    $('checkpoints-info').textContent = c.checkpoints.length
      ? `${c.checkpoints.length} kept`
      : 'none stored';
    const refused = c.not_stored || [];
    $('not-stored').hidden = refused.length === 0;
    $('not-stored').textContent = refused.length
      ? `Not stored (the checkpoint-store refused them): ${refused.map((r) => `iteration ${r.training_iteration}: ${r.reason}`).join('; ')}`
      : '';
  };

  // ---- stdout and stderr

  const loadLog = async (stream) => {
    const box = $(stream);
    const atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
    const log = await getJson(`${api}/logs?stream=${stream}`);
    box.textContent = log.exists ? log.text : '';
    $(`${stream}-info`).textContent = log.exists
      ? (log.offset > 0
          ? `last ${bytesText(log.size - log.offset)} of ${bytesText(log.size)}`
          : bytesText(log.size)) + ` · ${log.path}`
      : `no ${stream} yet: the trial-worker writes ${log.path} when the trainable starts ` +
        '(a worker on another host, to its own results folder unless it is shared)';
    if (atBottom) box.scrollTop = box.scrollHeight;
  };

  // ---- loading and live updates

  const load = async (parts) => {
    try {
      await Promise.all(parts.map((f) => f()));
      showError(null);
    } catch (e) {
      showError(e);
    }
  };
  const everything = [
    loadTrial,
    loadCurve,
    loadResults,
    loadCheckpoints,
    () => loadLog('stdout'),
    () => loadLog('stderr'),
  ];
  // What an event may have changed (the chart grows from the event itself).
  const reload = throttle(
    () =>
      load([
        loadTrial,
        loadCheckpoints,
        () => loadLog('stdout'),
        () => loadLog('stderr'),
        ...(state.offset === null ? [loadResults] : []),
      ]),
    1000,
  );

  connectEvents(
    (kind, data) => {
      if (kind === 'reset') {
        reload();
        return;
      }
      if (data.trial_id !== trialId || !state.info) return;
      if (data.experiment !== state.info.experiment && data.experiment !== state.info.journal)
        return;
      if (kind === 'trial_result' && data.trial && data.trial.last_result)
        addPoint(data.trial.last_result);
      reload();
    },
    () => load(everything),
  );

  $('chart-x').addEventListener('change', drawChart);
  $('chart-y').addEventListener('change', () => {
    state.pickedY = $('chart-y').value;
    drawChart();
  });
  const page = (offset) => {
    state.offset = offset;
    load([loadResults]);
  };
  $('results-first').addEventListener('click', () => page(0));
  $('results-prev').addEventListener('click', () => page(Math.max(0, state.shown - RESULTS_PAGE)));
  $('results-next').addEventListener('click', () => page(state.shown + RESULTS_PAGE));
  $('results-last').addEventListener('click', () => page(null));
  load(everything);
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

document.addEventListener('DOMContentLoaded', () => {
  if (document.body.dataset.page === 'trial') trialPage();
});
