#!/usr/bin/python3
"""The dashboard's analysis views in a real browser (docs/how-to/dashboard.md): Debian's chromium,
headless, driven by chromium-driver through python3-selenium, against a real suite (`tunectl up
--http`) on loopback running an ASHA experiment of command trainables.

Scenario: 12 trials, x from a grid in decreasing order (so later trials are worse and ASHA stops
them at a rung), `noise` uniform and unused: the metric is x * t / (t + 1) at iteration t, a
function of x alone. ASHA has max_t 8, grace_period 1, reduction_factor 2 (rungs 1, 2, 4). The
worst trial (the last) waits for a release file before its first result, so the experiment runs
while the test looks at it. The test checks:
  - the experiments page shows a progress bar at 11/12 with an ETA while the experiment runs;
  - the experiment page's optimization history has one point per trial with the metric and a
    best-so-far line ending at the best value `tunectl ls` shows, and grows to 12 points live
    (no reload) when the last trial reports;
  - the parallel coordinates draw one line per trial over the axes x, noise and the metric (the
    constant config key `gate` is not an axis);
  - the hyperparameter importance ranks x first;
  - the trial scheduler's decisions list exactly the trials `tunectl ls` shows TERMINATED before
    max_t, each with the rung it stopped at (its training_iteration), and the max_t stops;
  - the searcher's phase says the grid is exhausted;
  - the learning curves switch to time_total_s on the x axis;
  - each canvas has pixels of its datasets' colours.
Screenshots (experiments-progress.png, experiment-analysis.png, and failure-analysis.png when it
fails) go to $TUNEBUS_SCREENSHOT_DIR, else the test's temporary folder.

Run by ctest as browser.dashboard_analysis (tests/CMakeLists.txt) with /usr/bin/python3. Exit 77
(skipped) without selenium, chromium or chromedriver, except under CI=true. Every process started
here is stopped; every wait is bounded.
"""

import json
import os
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_dashboard as base  # noqa: E402  (skips or fails itself without selenium/chromium)
from test_dashboard import BrowserTest, text_of, wait_for  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

XS = [0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1]
MAX_T = 8
RUNGS = {1, 2, 4}

TRAINABLE = textwrap.dedent(
    """\
    import os, sys, time
    sys.path.insert(0, %(clients)r)
    import tunebus

    config = tunebus.config()
    x = config["x"]
    if x == %(gated)r:  # the last trial waits until the test releases it
        while not os.path.exists(os.path.join(config["gate"], "release")):
            time.sleep(0.01)
    for t in range(1, 50):
        tunebus.report(score=x * t / (t + 1))
        time.sleep(0.1)
    """
)

EXPERIMENT = textwrap.dedent(
    """\
    name: analysis
    trainable:
      command: [%(python)s, %(trainable)s]
    param_space:
      x: {grid_search: %(xs)s}
      noise: {uniform: [0, 1]}
      gate: %(gate)s
    metric: score
    mode: max
    seed: 7
    scheduler:
      type: asha
      time_attr: training_iteration
      max_t: %(max_t)d
      grace_period: 1
      reduction_factor: 2
    resources_per_trial:
      cpu: 1
    max_concurrent_trials: 3
    results_dir: %(results)s
    """
)


def js(driver, script, *args):
    return driver.execute_script(script, *args)


def dataset_lengths(driver, canvas):
    return js(
        driver,
        "const c = Chart.getChart(arguments[0]);"
        "return c ? c.data.datasets.map((d) => d.data.length) : null;",
        canvas,
    )


def canvas_pixels(driver, canvas, colour=None):
    """Pixels of canvas `canvas` near `colour` (#rrggbb), or (no colour) saturated pixels: the
    lines and points of a dataset, not the grey grid and text."""
    return js(
        driver,
        """
        const c = document.getElementById(arguments[0]);
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const want = arguments[1]
          && [1, 3, 5].map((i) => parseInt(arguments[1].slice(i, i + 2), 16));
        let n = 0;
        for (let i = 0; i < d.length; i += 4) {
          if (d[i + 3] < 200) continue;
          if (want) {
            if (Math.abs(d[i] - want[0]) < 24 && Math.abs(d[i + 1] - want[1]) < 24 &&
                Math.abs(d[i + 2] - want[2]) < 24) n++;
          } else if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 80) {
            n++;
          }
        }
        return n;""",
        canvas,
        colour,
    )


def main():
    with BrowserTest(
        "tunebus-analysis-",
        ("experiments-progress.png", "experiment-analysis.png"),
        "failure-analysis.png",
        "gate/release",
    ) as test:
        gate = os.path.dirname(test.release)
        trainable = test.write(
            "trainable.py",
            TRAINABLE
            % {"clients": os.path.join(base.SOURCE_DIR, "clients", "python"), "gated": XS[-1]},
        )
        journal = test.submit(
            EXPERIMENT
            % {
                "python": sys.executable,
                "trainable": trainable,
                "xs": json.dumps(XS),
                "gate": gate,
                "max_t": MAX_T,
                "results": test.path("results"),
            },
            "analysis",
        )
        suite = test.suite
        finished = lambda: sum(
            1
            for t in suite.tunectl_json("ls", "-e", journal)
            if t["status"] in ("TERMINATED", "ERROR")
        )
        wait_for(
            "11 of 12 trials finished (the last waits for its release)",
            lambda: finished() == len(XS) - 1,
            90,
            0.2,
        )

        driver = test.browser()
        base_url = suite.http.rstrip("/")

        # The experiments page: the progress bar at 11/12 with an ETA.
        driver.get(base_url + "/")
        cell = 'tr[data-journal="%s"] .progress' % journal
        WebDriverWait(driver, 10).until(
            lambda d: js(d, "return !!document.querySelector(arguments[0]);", cell)
        )
        fraction = float(
            js(driver, "return document.querySelector(arguments[0]).dataset.fraction;", cell)
        )
        eta_s = js(driver, "return document.querySelector(arguments[0]).dataset.etaS;", cell)
        eta_text = text_of(driver, cell + " .eta")
        width = js(
            driver,
            "return document.querySelector(arguments[0] + ' .fill').getBoundingClientRect().width /"
            " document.querySelector(arguments[0] + ' .bar').getBoundingClientRect().width;",
            cell,
        )
        print(
            "experiments page progress: fraction %.3f, bar filled %.3f, %r, eta_s %s"
            % (fraction, width, text_of(driver, cell + " .progress-text") + " " + eta_text, eta_s)
        )
        assert abs(fraction - 11 / 12) < 1e-6, fraction
        assert abs(width - 11 / 12) < 0.05, width
        assert eta_s not in ("", None) and float(eta_s) > 0 and eta_text.startswith("ETA "), (
            eta_s,
            eta_text,
        )
        test.shot("experiments-progress.png")

        # The experiment's page while the last trial waits: 11 points in the history.
        driver.get("%s/experiments/%s" % (base_url, journal))
        WebDriverWait(driver, 10).until(lambda d: text_of(d, "#live") == "live")
        WebDriverWait(driver, 10).until(
            lambda d: (dataset_lengths(d, "history") or [0])[0] == len(XS) - 1
        )
        print("history before the release:", dataset_lengths(driver, "history"))

        # Release the last trial: its result reaches the open page's charts without a reload.
        open(test.release, "w").close()
        wait_for(
            "the experiment to finish",
            lambda: suite.api("/api/experiments/" + journal)["finished"],
            60,
            0.2,
        )
        WebDriverWait(driver, 10).until(
            lambda d: dataset_lengths(d, "history") == [len(XS), len(XS)]
        )
        trials = suite.tunectl_json("ls", "-e", journal)
        assert len(trials) == len(XS), len(trials)
        WebDriverWait(driver, 10).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, "#decisions tbody tr"))
            == sum(1 for t in trials if t["status"] == "TERMINATED")
        )

        # Optimization history: the best-so-far line ends at the best metric tunectl shows.
        scores = [t["last_result"]["score"] for t in trials]
        last_best = js(
            driver,
            "const d = Chart.getChart('history').data.datasets[1].data;"
            "return d[d.length - 1].y;",
        )
        print(
            "history: datasets %s, best so far ends at %s (tunectl ls best %s), "
            "%d pixels of the points"
            % (
                dataset_lengths(driver, "history"),
                last_best,
                max(scores),
                canvas_pixels(driver, "history", "#1f77b4"),
            )
        )
        # The columns carry 6 significant digits.
        assert abs(last_best - max(scores)) <= 1e-5 * abs(max(scores)), (last_best, max(scores))
        assert canvas_pixels(driver, "history", "#1f77b4") > 50
        assert canvas_pixels(driver, "history", "#d62728") > 50

        # Parallel coordinates: one line per trial over x, noise and the metric.
        lines = dataset_lengths(driver, "parallel")
        labels = js(driver, "return Chart.getChart('parallel').data.labels.map((l) => l[0]);")
        print(
            "parallel coordinates: %d lines of %s points, axes %s, %d coloured pixels"
            % (len(lines), set(lines), labels, canvas_pixels(driver, "parallel"))
        )
        assert len(lines) == len(XS) and set(lines) == {3}, lines
        assert labels == ["noise", "x", "score"], labels
        assert canvas_pixels(driver, "parallel") > 200

        # Importance: x first.
        ranked = js(
            driver,
            "return [...document.querySelectorAll('#importance-list li')]"
            ".map((l) => [l.dataset.param, Number(l.dataset.importance)]);",
        )
        print(
            "importance:",
            ranked,
            "%d pixels of the bars" % canvas_pixels(driver, "importance", "#2ca02c"),
        )
        assert ranked[0][0] == "x" and ranked[0][1] > 0.5, ranked
        assert dataset_lengths(driver, "importance") == [2]
        assert canvas_pixels(driver, "importance", "#2ca02c") > 100

        # The trial scheduler's decisions: the trials tunectl ls shows stopped before max_t, at
        # their rung; the others stopped at max_t.
        rows = js(
            driver,
            "return [...document.querySelectorAll('#decisions tbody tr')].map((r) =>"
            " [r.dataset.trialId, r.dataset.kind, r.dataset.rung, r.cells[4].textContent]);",
        )
        stopped_early = {
            t["trial_id"]: t["training_iteration"]
            for t in trials
            if t["status"] == "TERMINATED" and t["training_iteration"] < MAX_T
        }
        at_rung = {r[0]: float(r[2]) for r in rows if r[1] == "stop" and r[2] != ""}
        at_max_t = sorted(r[0] for r in rows if r[1] == "stop" and r[2] == "")
        print(
            "decisions: %d rows; stopped at a rung %s; at max_t %d trials"
            % (len(rows), sorted(at_rung.items()), len(at_max_t))
        )
        print("tunectl ls: stopped before max_t", sorted(stopped_early.items()))
        assert stopped_early, "ASHA stopped no trial early"
        assert at_rung == {k: float(v) for k, v in stopped_early.items()}, (at_rung, stopped_early)
        assert set(at_rung.values()) <= RUNGS, at_rung
        assert at_max_t == sorted(t["trial_id"] for t in trials if t["training_iteration"] == MAX_T)

        # The searcher's phase: the grid is exhausted.
        phase = js(driver, "return document.getElementById('searcher-phase').dataset.phase;")
        print("searcher phase:", phase, "-", text_of(driver, "#searcher-phase"))
        assert phase == "exhausted", phase

        # Learning curves against time.
        best_id = suite.api("/api/experiments/" + journal)["best"]["trial_id"]
        WebDriverWait(driver, 10).until(
            lambda d: js(
                d,
                "const c = Chart.getChart('curve'); const s = c && c.data.datasets.find("
                "(x) => x.label === arguments[0]); return s ? s.data.length : 0;",
                best_id,
            )
            == MAX_T
        )
        Select(driver.find_element(By.ID, "curve-x")).select_by_value("time_total_s")
        xs = js(
            driver,
            "return Chart.getChart('curve').data.datasets.find((x) => x.label === arguments[0])"
            ".data.map((p) => p.x);",
            best_id,
        )
        title = js(driver, "return Chart.getChart('curve').options.scales.x.title.text;")
        best = next(t for t in trials if t["trial_id"] == best_id)
        print(
            "curve of %s against %s: x %s (time_total_s of its last result %s)"
            % (best_id, title, [round(x, 3) for x in xs], best["last_result"]["time_total_s"])
        )
        assert title == "time_total_s" and len(xs) == MAX_T and xs == sorted(xs), (title, xs)
        assert abs(xs[-1] - best["last_result"]["time_total_s"]) < 1e-6
        driver.set_window_size(1400, 1500)  # the panels and the decisions in one picture
        driver.execute_script("document.getElementById('analysis').scrollIntoView();")
        test.shot("experiment-analysis.png")


if __name__ == "__main__":
    main()
