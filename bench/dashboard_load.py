#!/usr/bin/python3
"""The dashboard with big experiments (run by bench/run as the step `dashboard`).

Starts checkpoint-store, resource-manager, a scheduler with `--http` and trial-worker processes
on tcp:// loopback (bench/e2e.py's Cluster), runs two experiments of T trials (10,000, --quick
too: ~5 s each) of the built-in `mock` trainable (3 results each, lr log-uniform: a metric that
differs between trials), result files on tmpfs:
  finished  ends TERMINATED with T trials;
  running   T trials plus 2 added at its start (add_trial_command) that report a result every
            0.25 s until stopped: it stays RUNNING with T + 2 trials.
Then, in Debian's chromium headless (chromium-driver, python3-selenium), prints one JSON object
per line:

  dashboard_page_load     per page and case, N loads (--loads, after one not counted): navigation
                          start -> the page's first render (performance.now() at the DOM change
                          after which the summary, the best trial and the trial table's first
                          page are drawn, seen by a MutationObserver this script installs before
                          the page's scripts; on the experiments page its table), p50/p95/max ms.
                          Cases of the experiment page, its query in the address: creation order,
                          sort by the metric (descending), status filter (TERMINATED), page 200
                          (offset 4975, or the middle page with fewer trials), sort by the metric
                          at page 200; each is checked to show the API's rows for that query.
  dashboard_sort_click    the creation-order page drawn, a click on the metric's header -> the
                          table shows the ascending order; p50/p95/max ms.
  dashboard_result_latency  the running experiment's page open: a result of an added trial, from
                          the scheduler publishing it (its trial_result event, received by this
                          script on the event stream) to the page's row showing its iteration (a
                          MutationObserver's wall clock); p50/p95/max ms over R results.
  dashboard_control_request  the list_trials request each case makes (and the summary's
                          get_experiment), sent straight to the control socket while the
                          cluster is idle: p50/p95 ms from send to reply received
                          (an upper bound of its time on the event loop) and the reply's bytes;
                          beside it the whole experiment's list (limit 0), what sorting cost before
                          the scheduler sorted (and what `tunectl ls` asks).
  dashboard_browsing_cost  trials/s of a noop experiment (--cost-trials trials on the same
                          workers) alone, and while a client asks the running experiment's sorted
                          page 200 (summary + trials) over HTTP 10 times a second (ten open pages
                          reloading at their most) and back to back; the ratios to alone. On a
                          2-core host the back-to-back client and the HTTP threads take CPU from
                          the scheduler, not only its loop's time.

Exit 77 ("skipped" on stdout) without selenium, chromium or chromedriver, except under CI=true,
where that fails (exit 1).
Usage: dashboard_load.py --bin BUILD/bin [--quick] [--trials T] [--loads N]
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import msgpack
import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import Cluster, noop_spec, percentile  # noqa: E402
from machine import machine  # noqa: E402

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "browser")
)
import headless_chromium  # noqa: E402  (chromium and the waits, shared with the browser tests)
from headless_chromium import wait_for  # noqa: E402

PAGE_ROWS = 25  # the experiment page's rows per page (dashboard.js)


def skip_or_fail(why):
    if os.environ.get("CI") == "true":
        print("CI=true but the dashboard benchmark cannot run: " + why, file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"benchmark": "dashboard_page_load", "skipped": why}))
    sys.exit(77)


def emit(obj):
    obj["machine"] = machine()
    print(json.dumps(obj), flush=True)


def stats(name, values):
    """{name_p50, name_p95, name_max} of `values` (bench/floors.json judges top-level fields)."""
    return {
        name + "_p50": round(percentile(values, 50), 2),
        name + "_p95": round(percentile(values, 95), 2),
        name + "_max": round(max(values), 2),
    }


def mock_spec(name, trials, results_dir):
    return (
        "name: %s\ntrainable: {builtin: mock}\n"
        "param_space: {lr: {loguniform: [0.0001, 1.0]}, mock_iterations: 3, sleep_s: 0}\n"
        "num_samples: %d\nseed: 1\nmetric: mean_accuracy\nmode: max\n"
        "resources_per_trial: {cpu: 1}\nresults_dir: %s\n" % (name, trials, results_dir)
    )


def submit(c, spec):
    return c.request("submit_experiment", spec_yaml=spec, base_dir=c.tmp, source_name="bench.yaml")


def wait_ended(c, name, timeout_s):
    return wait_for(
        name + " to end",
        lambda: (lambda s: s if s["status"] != "RUNNING" else None)(
            c.request("get_experiment", experiment=name)
        ),
        timeout_s,
        0.2,
    )


def chrome():
    driver = headless_chromium.chrome()
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": FIRST_RENDER})
    return driver


# Run in every page before its own scripts (DevTools Page.addScriptToEvaluateOnNewDocument):
# window.__renderedMs = performance.now() (ms from navigation start) at the first DOM change
# after which the page is drawn: on the experiment page the summary's cards, the best trial
# and the trial table's first page with its page-info; on the experiments page its table's
# rows. window.__tbodyAt: the newest change of the trial table's rows. (The paint follows in
# the next frame.)
FIRST_RENDER = """
(() => {
  const drawn = () => {
    const q = (s) => document.querySelector(s);
    if (document.body.dataset.page === 'experiment') {
      return q('#summary .card') && q('#best') && q('#best').firstChild &&
        q('#trials tbody tr') && q('#page-info').textContent !== '';
    }
    return q('#experiments tbody tr');
  };
  const observer = new MutationObserver((records) => {
    const now = performance.now();
    for (const r of records) {
      if (r.target.nodeName === 'TBODY' && r.target.parentNode.id === 'trials') {
        window.__tbodyAt = now;
      }
    }
    if (window.__renderedMs === undefined && drawn()) window.__renderedMs = now;
  });
  document.addEventListener('DOMContentLoaded', () => observer.observe(document.body,
    {subtree: true, childList: true, characterData: true}));
})();
"""


def rendered_ms(driver):
    return driver.execute_script(
        "return window.__renderedMs === undefined ? null : window.__renderedMs;"
    )


def page_state(driver):
    """What the experiment page shows: its table's first trial, page-info, error, best trial."""
    return driver.execute_script(
        """
        const q = (s) => document.querySelector(s);
        const rows = [...document.querySelectorAll('#trials tbody tr[data-trial-id]')];
        return {rows: rows.map((r) => r.dataset.trialId),
                statuses: rows.map((r) => r.querySelector('.status-cell').textContent),
                info: q('#page-info').textContent,
                error: q('#error').hidden ? null : q('#error').textContent,
                best: q('#best-trial') ? q('#best-trial').dataset.trialId : null,
                cards: document.querySelectorAll('#summary .card').length};"""
    )


def time_loads(driver, url, loads, check):
    """Navigates to `url` `loads` times; each load's ms from navigation start to the first render.
    `check(driver)` raises when the page does not show what the case asked."""
    times = []
    for _ in range(loads + 1):  # the first load warms the browser's cache and is not counted
        driver.get(url)
        ms = wait_for("the first render of " + url, lambda: rendered_ms(driver), 30, 0.01)
        check(driver)
        times.append(float(ms))
        if ms > SLOW_LOAD_MS:
            explain_slow_load(driver, url, ms)
    return times[1:]


SLOW_LOAD_MS = 1000  # the target: a slower load prints where its time went


def explain_slow_load(driver, url, ms):
    """Prints (stderr) the Resource Timing of each request the page made before its first
    render (ms from navigation start): when it was asked, how long it waited before connecting
    (a free connection), connecting, and for the answer's first byte once sent, and its end; so
    a slow load in CI names its cause."""
    entries = driver.execute_script(
        """
        const nav = performance.getEntriesByType('navigation')[0] || {};
        const row = (name, r) => ({name, start: r.startTime || 0,
          stalled: r.connectStart ? r.connectStart - (r.fetchStart || r.startTime) : null,
          connect: r.connectStart ? r.connectEnd - r.connectStart : null,
          first_byte: r.requestStart ? r.responseStart - r.requestStart : null,
          end: r.responseEnd});
        return [row('document', nav)].concat(performance.getEntriesByType('resource').map(
          (r) => row(r.name.replace(location.origin, ''), r)));"""
    )
    print(
        "dashboard_load: %s rendered after %.0f ms; its requests (ms from navigation start):"
        % (url, ms),
        file=sys.stderr,
    )
    num = lambda v: "%.1f" % v if v is not None else "-"
    for e in entries:
        print(
            "  %-60s asked %7.1f  stalled %7s  connect %7s  first byte after %7s  done %7.1f"
            % (
                e["name"][:60],
                e["start"],
                num(e["stalled"]),
                num(e["connect"]),
                num(e["first_byte"]),
                e["end"] or 0,
            ),
            file=sys.stderr,
        )


def api(http, path, timeout_s=30):
    with urllib.request.urlopen(http.rstrip("/") + path, timeout=timeout_s) as r:
        return json.load(r)


def bench_page_loads(a, driver, http, experiments, trials, reference, added):
    """dashboard_page_load lines; `reference[journal]` = the API's sorted pages to compare with."""
    page_offset = min(199 * PAGE_ROWS, (trials // PAGE_ROWS // 2) * PAGE_ROWS)
    times = time_loads(driver, http, a.loads, lambda d: None)
    shown = driver.execute_script(
        "return document.querySelectorAll('#experiments tbody tr').length;"
    )
    assert shown >= 2, "the experiments page shows %d experiments" % shown
    emit(
        {
            "benchmark": "dashboard_page_load",
            "page": "experiments",
            "case": "all",
            "trials": trials,
            "experiments": shown,
            "loads": a.loads,
            **stats("load_ms", times),
            "load_ms_all": times,
        }
    )
    for kind, journal in experiments.items():
        base = http.rstrip("/") + "/experiments/" + urllib.parse.quote(journal)
        cases = [
            ("creation", {}),
            ("sort_metric", {"sort": "-metric"}),
            ("status_filter", {"status": "TERMINATED"}),
            ("page_200", {"offset": page_offset}),
            ("sort_metric_page_200", {"sort": "-metric", "offset": page_offset}),
        ]
        for case, query in cases:
            want = reference[journal][case]
            if query and not query_read(driver, base, query):
                emit(
                    {
                        "benchmark": "dashboard_page_load",
                        "page": "experiment",
                        "experiment": kind,
                        "case": case,
                        "query": query,
                        "trials": trials,
                        "skipped": "this dashboard.js does not read the table's query from the "
                        "address",
                    }
                )
                continue

            def check(d, want=want, query=query, case=case, kind=kind):
                s = page_state(d)
                assert s["error"] is None, s
                assert s["best"] and s["cards"] > 0, s
                # The running experiment's added trials report meanwhile and climb in the
                # metric's order: its other rows must be the API's, in any order.
                if kind == "finished":
                    ok = s["rows"] == want
                else:
                    ok = len(s["rows"]) == len(want) and set(s["rows"]) - set(added) <= set(want)
                assert ok, "%s: the page shows %s..., the API %s..." % (
                    case,
                    s["rows"][:3],
                    want[:3],
                )
                if "status" in query:
                    assert set(s["statuses"]) == {query["status"]}, s["statuses"]

            url = base + ("?" + urllib.parse.urlencode(query) if query else "")
            times = time_loads(driver, url, a.loads, check)
            emit(
                {
                    "benchmark": "dashboard_page_load",
                    "page": "experiment",
                    "experiment": kind,
                    "case": case,
                    "query": query,
                    "trials": trials,
                    "loads": a.loads,
                    **stats("load_ms", times),
                    "load_ms_all": times,
                }
            )
        bench_sort_click(a, driver, base, kind, trials, reference[journal]["sort_metric_asc"])


def query_read(driver, base, query):
    """Whether the page took the table's query from its address (its status filter, the sort
    column's arrow and the page's first row number say so): a dashboard.js from before that
    shows the creation order's first page."""
    driver.get(base + "?" + urllib.parse.urlencode(query))
    wait_for("the first render", lambda: rendered_ms(driver), 30, 0.01)
    return driver.execute_script(
        """
        const [status, sort, offset] = arguments;
        const th = sort && document.querySelector(`th[data-sort="${sort.replace(/^-/, '')}"]`);
        return document.getElementById('status-filter').value === status &&
          (!sort || (th && th.textContent.endsWith(sort.startsWith('-') ? '▼' : '▲'))) &&
          document.getElementById('page-info').textContent.startsWith(`${offset + 1}–`);""",
        query.get("status", ""),
        query.get("sort", ""),
        query.get("offset", 0),
    )


def bench_sort_click(a, driver, base, kind, trials, want):
    """dashboard_sort_click: the creation-order page drawn, a click on the metric's column header
    -> the table shows the ascending order (`want`, the API's first page)."""
    times = []
    for _ in range(a.loads + 1):
        driver.get(base)
        wait_for("the first render", lambda: rendered_ms(driver), 30, 0.01)
        t0 = driver.execute_script(
            "const t = performance.now(); "
            "document.querySelector('th[data-sort=metric]').click(); return t;"
        )
        wait_for(
            "the sorted page",
            lambda: (lambda rows: rows == want if kind == "finished" else set(rows) == set(want))(
                page_state(driver)["rows"]
            ),
            30,
            0.01,
        )
        times.append(driver.execute_script("return window.__tbodyAt;") - t0)
    times = times[1:]
    emit(
        {
            "benchmark": "dashboard_sort_click",
            "page": "experiment",
            "experiment": kind,
            "case": "sort_metric_click",
            "trials": trials,
            "loads": a.loads,
            **stats("click_ms", times),
            "click_ms_all": times,
        }
    )


def reference_pages(http, journal, trials):
    page_offset = min(199 * PAGE_ROWS, (trials // PAGE_ROWS // 2) * PAGE_ROWS)
    out = {}
    for case, query in [
        ("creation", {}),
        ("sort_metric", {"sort": "-metric"}),
        ("status_filter", {"status": "TERMINATED"}),
        ("page_200", {"offset": page_offset}),
        ("sort_metric_page_200", {"sort": "-metric", "offset": page_offset}),
        ("sort_metric_asc", {"sort": "metric"}),
    ]:
        q = dict(query, limit=PAGE_ROWS)
        page = api(
            http,
            "/api/experiments/%s/trials?%s"
            % (urllib.parse.quote(journal), urllib.parse.urlencode(q)),
        )
        out[case] = [t["trial_id"] for t in page["trials"]]
    return out, control_list(http, journal)


def control_list(http, journal):
    """Every trial of `journal` in creation order, through the API's pages of 1,000."""
    out, offset = [], 0
    while True:
        page = api(
            http,
            "/api/experiments/%s/trials?limit=1000&offset=%d"
            % (urllib.parse.quote(journal), offset),
        )
        out.extend(page["trials"])
        offset += 1000
        if offset >= page["total"]:
            return out


def check_sorted(full, sorted_ids, metric):
    """The API's -metric page 1 is the trials with the highest metric, ties in creation order."""

    def key(t):
        v = (t.get("last_result") or {}).get(metric)
        return (0, -v) if isinstance(v, (int, float)) else (1, 0)

    expect = [t["trial_id"] for t in sorted(full, key=key)[: len(sorted_ids)]]
    assert expect == sorted_ids, "the -metric page %s... differs from %s..." % (
        sorted_ids[:3],
        expect[:3],
    )


def bench_result_latency(a, driver, c, http, journal, trial_ids, trials):
    """dashboard_result_latency: the running experiment's page open on the added trials' rows."""
    driver.get(http.rstrip("/") + "/experiments/" + urllib.parse.quote(journal))
    wait_for("the running page", lambda: rendered_ms(driver), 30, 0.01)
    wait_for(
        "the live badge",
        lambda: driver.execute_script(
            "return document.getElementById('live').textContent === 'live';"
        ),
        10,
    )
    driver.execute_script(
        "const s = document.getElementById('status-filter'); s.value = 'RUNNING';"
        "s.dispatchEvent(new Event('change'));"
    )
    wait_for(
        "the running trials' rows", lambda: set(trial_ids) <= set(page_state(driver)["rows"]), 10
    )
    # The page's wall clock each time a row's iteration cell changes: {trial: {iteration: ms}}.
    driver.execute_script(
        """
        window.__seen = {};
        const note = () => {
          const now = performance.timeOrigin + performance.now();
          for (const tr of document.querySelectorAll('#trials tbody tr[data-trial-id]')) {
            const cell = tr.querySelector('td.training_iteration');
            if (!cell) continue;
            const m = window.__seen[tr.dataset.trialId] = window.__seen[tr.dataset.trialId] || {};
            if (!(cell.textContent in m)) m[cell.textContent] = now;
          }
        };
        new MutationObserver(note).observe(document.getElementById('trials'),
          {subtree: true, childList: true, characterData: true});
        note();"""
    )
    ctx = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(c.endpoints["events"])
    published = {}  # (trial, iteration) -> wall ms the event reached this script
    deadline = time.monotonic() + 60
    time.sleep(0.3)  # the SUB's subscription reaches the publisher (events before are not counted)
    while len(published) < a.results and time.monotonic() < deadline:
        if not sub.poll(1000):
            continue
        frames = sub.recv_multipart()
        now = time.time() * 1000
        event = msgpack.unpackb(frames[-1], raw=False)
        if event.get("event") != "trial_result" or event.get("trial_id") not in trial_ids:
            continue
        body = json.loads(event["body_json"])
        published[(event["trial_id"], str(body["training_iteration"]))] = now
    sub.close(linger=0)
    assert len(published) >= a.results, "only %d results in 60 s" % len(published)
    seen = wait_for(
        "the page to show every result",
        lambda: (lambda s: s if all(it in s.get(t, {}) for t, it in published) else None)(
            driver.execute_script("return window.__seen;")
        ),
        10,
    )
    latencies = [seen[t][it] - ms for (t, it), ms in published.items()]
    emit(
        {
            "benchmark": "dashboard_result_latency",
            "trials": trials + len(trial_ids),
            "results": len(latencies),
            **stats("latency_ms", latencies),
            "measured": "trial_result event received by the bench -> the page's row shows the "
            "iteration",
        }
    )


def bench_control_requests(a, c, journal, trials):
    """dashboard_control_request: list_trials as each case asks it, and the whole list."""
    page_offset = min(199 * PAGE_ROWS, (trials // PAGE_ROWS // 2) * PAGE_ROWS)
    cases = [
        ("creation", {}),
        ("sort_metric", {"sort": "-metric"}),
        ("status_filter", {"status": "TERMINATED"}),
        ("page_200", {"offset": page_offset}),
        ("sort_metric_page_200", {"sort": "-metric", "offset": page_offset}),
        ("sort_config", {"sort": "config.lr"}),
        ("sort_result", {"sort": "-result.loss"}),
    ]
    requests = [("list_trials", case, dict(q, limit=PAGE_ROWS)) for case, q in cases] + [
        ("list_trials", "all_trials", {"limit": 0}),
        ("get_experiment", "summary", {}),
    ]
    for kind, case, fields in requests:
        times, size = [], 0
        for i in range(a.requests + 2):
            c.send(kind, experiment=journal, **fields)
            t0 = time.perf_counter()
            raw = c.recv_raw(60)
            if i >= 2:  # two warm-ups
                times.append((time.perf_counter() - t0) * 1000)
            size = len(raw)
        reply = msgpack.unpackb(raw, raw=False)
        assert reply.get("type") == "control_reply", reply
        body = json.loads(reply["body_json"])
        emit(
            {
                "benchmark": "dashboard_control_request",
                "case": case,
                "request": dict(fields, type=kind),
                "trials": trials,
                "rows": len(body) if isinstance(body, list) else 1,
                "reply_bytes": size,
                **stats("round_trip_ms", times),
            }
        )


def bench_browsing_cost(a, c, http, journal):
    """dashboard_browsing_cost: a noop experiment's trials/s alone and while pages are asked."""
    page_offset = 199 * PAGE_ROWS
    path = "/api/experiments/%s" % urllib.parse.quote(journal)
    served = {}
    rates = {}
    # alone; 10 pages/s (ten open pages reloading at their most, 1/s each); back to back.
    for mode, interval_s in (("alone", None), ("paced", 0.1), ("back_to_back", 0.0)):
        stop = threading.Event()
        served[mode] = 0

        def browse(mode=mode, interval_s=interval_s, stop=stop):
            while not stop.is_set():
                api(http, path)
                api(
                    http,
                    path + "/trials?sort=-metric&limit=%d&offset=%d" % (PAGE_ROWS, page_offset),
                )
                served[mode] += 1
                stop.wait(interval_s)

        browser = threading.Thread(target=browse) if interval_s is not None else None
        if browser:
            browser.start()
        name = "cost_" + mode
        submit(c, noop_spec(name, a.cost_trials, 1, results_dir=c.results))
        summary = wait_ended(c, name, 600)
        if browser:
            stop.set()
            browser.join()
        rates[mode] = (a.cost_trials / summary["elapsed_s"], summary["elapsed_s"])
    line = {
        "benchmark": "dashboard_browsing_cost",
        "trials": a.cost_trials,
        "trials_per_s_alone": round(rates["alone"][0], 1),
    }
    for mode in ("paced", "back_to_back"):
        line["trials_per_s_" + mode] = round(rates[mode][0], 1)
        line["ratio_" + mode] = round(rates[mode][0] / rates["alone"][0], 3)
        line["pages_per_s_" + mode] = round(served[mode] / rates[mode][1], 1)
    emit(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trials", type=int)
    ap.add_argument("--loads", type=int)
    ap.add_argument("--results", type=int, help="results timed to the page")
    ap.add_argument("--requests", type=int, default=20, help="list_trials requests per case")
    ap.add_argument("--cost-trials", type=int)
    ap.add_argument("--workers", type=int, default=4)
    a = ap.parse_args()
    a.trials = a.trials or 10000  # ~5 s per experiment of them on 4 workers x 4 cpus
    a.loads = a.loads or (5 if a.quick else 20)
    a.results = a.results or (8 if a.quick else 20)
    a.cost_trials = a.cost_trials or (5000 if a.quick else 20000)
    if headless_chromium.missing():
        skip_or_fail(headless_chromium.missing())

    results = tempfile.mkdtemp(prefix="tunebus-bench-dashboard-", dir="/dev/shm")
    # The finished experiment is released 15 s after its end (--release-after-ms) and its
    # read-only copy kept in the finished cache, so its pages are read from memory, as a live
    # one's (docs/explanation/performance/memory.md).
    c = Cluster(a.bin, a.workers, 4, "tcp", scheduler_args=["--http", "127.0.0.1:0"])
    c.results = results
    driver = None
    try:
        ready = os.path.join(c.tmp, "scheduler.ready")
        http = wait_for(
            "the dashboard's address", lambda: json.load(open(ready))["endpoints"].get("http"), 30
        )
        t0 = time.time()
        finished = submit(c, mock_spec("finished", a.trials, results))
        wait_ended(c, "finished", 1800)
        made_s = time.time() - t0
        print("finished: %d trials in %.0f s" % (a.trials, made_s), file=sys.stderr)
        submit(c, mock_spec("running", a.trials, results))
        added = [
            c.request(
                "add_trial_command",
                experiment="running",
                config_json=json.dumps({"lr": 0.1, "sleep_s": 0.25, "mock_iterations": 10**9}),
            )["trial_id"]
            for _ in range(2)
        ]
        wait_for(
            "running's %d trials to finish" % a.trials,
            lambda: c.request("get_experiment", experiment="running")["counts"]["TERMINATED"]
            >= a.trials,
            1800,
            0.5,
        )
        journals = {
            "finished": finished["journal"]
            if "journal" in finished
            else c.request("get_experiment", experiment="finished")["journal"],
            "running": c.request("get_experiment", experiment="running")["journal"],
        }
        print("running: %d trials finished, %s run" % (a.trials, ", ".join(added)), file=sys.stderr)

        reference = {}
        for kind, journal in journals.items():
            reference[journal], full = reference_pages(http, journal, a.trials)
            if kind == "finished":
                check_sorted(full, reference[journal]["sort_metric"], "mean_accuracy")
        driver = chrome()
        bench_page_loads(a, driver, http, journals, a.trials, reference, added)
        bench_result_latency(a, driver, c, http, journals["running"], added, a.trials)
        driver.quit()
        driver = None
        bench_control_requests(a, c, journals["finished"], a.trials)
        bench_browsing_cost(a, c, http, journals["running"])
    finally:
        if driver is not None:
            driver.quit()
        c.stop()
        shutil.rmtree(results, ignore_errors=True)


if __name__ == "__main__":
    main()
