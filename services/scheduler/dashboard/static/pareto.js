// The Pareto front panel of a multi-objective experiment's page (docs/how-to/dashboard.md): with two
// objectives a scatter of every trial that has both, the front's trials marked and joined by a
// line in the order of the first objective; with three or more, parallel coordinates across the
// objectives' axes (each scaled to its range, "better" up), one line per trial, the front's in
// red over the others in grey. Below it, a table of the front's trials. Data comes from
// /api/experiments/NAME/pareto; the panel refetches when dashboard.js relays an event
// ('tunebus:event' on document), at most once a second. The panel stays hidden for an experiment
// of one objective.
'use strict';

(() => {
  const byId = (id) => document.getElementById(id);
  const COLOURS = { trial: '#9e9e9e', front: '#d62728' };
  const num = (v) =>
    typeof v !== 'number'
      ? '–'
      : Number.isInteger(v)
        ? String(v)
        : String(Number(v.toPrecision(4)));
  const axisTitle = (o) => `${o.metric} (${o.mode})`;

  // Two objectives: every trial a point, the front's marked and joined.
  function scatterConfig(view) {
    const [a, b] = view.objectives;
    const point = (p) => ({ x: p.values[0], y: p.values[1], trial_id: p.trial_id });
    const others = view.points.filter((p) => !p.front).map(point);
    const order = new Map(view.front.map((id, i) => [id, i]));
    const front = view.points
      .filter((p) => p.front)
      .sort((p, q) => order.get(p.trial_id) - order.get(q.trial_id))
      .map(point);
    return {
      type: 'scatter',
      data: {
        datasets: [
          {
            label: 'Pareto front',
            data: front,
            showLine: true,
            borderWidth: 2,
            pointRadius: 5,
            borderColor: COLOURS.front,
            backgroundColor: COLOURS.front,
          },
          {
            label: 'other trials',
            data: others,
            pointRadius: 3,
            borderColor: COLOURS.trial,
            backgroundColor: COLOURS.trial,
          },
        ],
      },
      options: {
        parsing: false,
        plugins: {
          tooltip: {
            callbacks: {
              label: (c) => `${c.raw.trial_id}: ${num(c.raw.x)}, ${num(c.raw.y)}`,
            },
          },
        },
        scales: {
          x: { type: 'linear', title: { display: true, text: axisTitle(a) } },
          y: { type: 'linear', title: { display: true, text: axisTitle(b) } },
        },
      },
    };
  }

  // Three or more: one line per trial over the objectives' axes, each scaled to [0, 1] with the
  // better end up (a "min" objective reversed).
  function parallelConfig(view) {
    const ranges = view.objectives.map((o, j) => {
      const vals = view.points.map((p) => p.values[j]);
      return { lo: Math.min(...vals), hi: Math.max(...vals), mode: o.mode };
    });
    const scaled = (v, r) => {
      const f = r.hi > r.lo ? (v - r.lo) / (r.hi - r.lo) : 0.5;
      return r.mode === 'min' ? 1 - f : f;
    };
    const line = (p) => ({
      label: p.trial_id,
      data: p.values.map((v, j) => scaled(v, ranges[j])),
      front: p.front,
      borderColor: p.front ? COLOURS.front : COLOURS.trial,
      backgroundColor: p.front ? COLOURS.front : COLOURS.trial,
      borderWidth: p.front ? 2.5 : 1,
      pointRadius: p.front ? 3 : 1,
      fill: false,
    });
    // The front's lines last, so they are drawn over the others.
    const datasets = [
      ...view.points.filter((p) => !p.front).map(line),
      ...view.points.filter((p) => p.front).map(line),
    ];
    return {
      type: 'line',
      data: {
        labels: view.objectives.map((o, j) => [
          axisTitle(o),
          `${num(ranges[j].lo)} – ${num(ranges[j].hi)}`,
        ]),
        datasets,
      },
      options: {
        plugins: { legend: { display: false } },
        scales: {
          x: { type: 'category', grid: { color: '#999' } },
          y: {
            type: 'linear',
            min: 0,
            max: 1,
            title: { display: true, text: 'scaled to each axis, better up' },
          },
        },
      },
    };
  }

  function drawTable(view, rows) {
    const tbody = byId('pareto-table').querySelector('tbody');
    const head = byId('pareto-table').querySelector('thead tr');
    head.replaceChildren(
      ...['trial', ...view.objectives.map(axisTitle)].map((t) => {
        const th = document.createElement('th');
        th.textContent = t;
        return th;
      }),
    );
    tbody.replaceChildren(
      ...rows.map((p) => {
        const tr = document.createElement('tr');
        tr.dataset.trial = p.trial_id;
        for (const text of [p.trial_id, ...p.values.map(num)]) {
          const td = document.createElement('td');
          td.textContent = text;
          tr.append(td);
        }
        return tr;
      }),
    );
  }

  // Draws `view` (the route's answer) into the panel; `chart` is the Chart drawn before (or
  // null); returns the Chart drawn now (null without Chart.js).
  function draw(view, chart) {
    const section = byId('pareto');
    section.hidden = false;
    const byTrial = new Map(view.points.map((p) => [p.trial_id, p]));
    const rows = view.front.map((id) => byTrial.get(id)).filter((p) => p);
    byId('pareto-note').textContent =
      `${view.front.length} of ${view.points.length} trials with every objective are on ` +
      `the front (${view.objectives.map(axisTitle).join(', ')})`;
    drawTable(view, rows);
    section.dataset.front = view.front.join(',');
    section.dataset.loadedAt = Date.now();
    if (typeof Chart === 'undefined') return null;
    const config = view.objectives.length === 2 ? scatterConfig(view) : parallelConfig(view);
    if (chart && chart.config.type !== config.type) {
      chart.destroy();
      chart = null;
    }
    if (chart) {
      chart.data = config.data;
      chart.options.scales = config.options.scales;
      chart.update('none');
      return chart;
    }
    config.options = Object.assign(
      { animation: false, maintainAspectRatio: false },
      config.options,
    );
    return new Chart(byId('pareto-chart'), config);
  }

  function panel() {
    if (!byId('pareto')) return;
    const journal = decodeURIComponent(location.pathname.replace(/^\/experiments\//, ''));
    const api = `/api/experiments/${encodeURIComponent(journal)}/pareto`;
    let chart = null;
    let busy = false,
      timer = null,
      last = 0;
    const load = async () => {
      if (busy) return;
      busy = true;
      try {
        const view = await fetch(api, { cache: 'no-store' }).then((r) => r.json());
        if (view.error) throw new Error(view.error);
        if (view.objectives && view.objectives.length >= 2) chart = draw(view, chart);
      } catch (e) {
        byId('pareto-note').textContent = String(e.message || e);
      } finally {
        busy = false;
      }
    };
    const again = () => {
      if (timer) return;
      timer = setTimeout(
        () => {
          timer = null;
          last = Date.now();
          load();
        },
        Math.max(last + 1000 - Date.now(), 0),
      );
    };
    document.addEventListener('tunebus:event', (e) => {
      const { data } = e.detail || {};
      if (!data || !data.experiment || journal.startsWith(data.experiment)) again();
    });
    last = Date.now();
    load();
  }

  document.addEventListener('DOMContentLoaded', () => {
    if (document.body.dataset.page === 'experiment') panel();
  });
})();
