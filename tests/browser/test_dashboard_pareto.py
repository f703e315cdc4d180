#!/usr/bin/python3
"""The Pareto front panel of a multi-objective experiment's page in a real browser
(docs/how-to/dashboard.md): Debian's chromium, headless, driven by chromium-driver through
python3-selenium, against a real suite (`tunectl up --http`) on loopback.

Scenario: two experiments of command trainables over a grid of x (and y), each trial reporting
once, f1 = x^2, f2 = (x - 2)^2 (Schaffer's first problem; its Pareto set is 0 <= x <= 2), and in
the second f3 = y plus the same two. The first has two objectives (both min), the second three
(f1 min, f2 min, f3 max). The test computes each front from `tunectl ls` (the trials' last
results) by brute force and checks:
  - the two-objective page draws a scatter: the "Pareto front" dataset holds exactly the front's
    trials, in the order of f1, joined by a line; the "other trials" dataset every other trial;
    the canvas has pixels of the front's red; the table below lists the front;
  - the three-objective page draws parallel coordinates over the three objectives' axes, one
    line per trial, the front's lines red and exactly the front's trials;
  - `tunectl best` lists the same front.
Screenshots (pareto-scatter.png, pareto-parallel.png, and failure-pareto.png when it fails) go
to $TUNEBUS_SCREENSHOT_DIR, else the test's temporary folder.

Run by ctest as browser.dashboard_pareto (tests/CMakeLists.txt) with /usr/bin/python3. Exit 77
(skipped) without selenium, chromium or chromedriver, except under CI=true. Every process started
here is stopped; every wait is bounded.
"""

import os
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_dashboard as base  # noqa: E402  (skips or fails itself without selenium/chromium)
from test_dashboard import BrowserTest, text_of, wait_for  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402
from test_dashboard_analysis import canvas_pixels, js  # noqa: E402

XS = [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
RED = "#d62728"

TRAINABLE = textwrap.dedent(
    """\
    import sys
    sys.path.insert(0, %(clients)r)
    import tunebus

    config = tunebus.config()
    x, y = config["x"], config.get("y", 0.0)
    tunebus.report(f1=x * x, f2=(x - 2) ** 2, f3=y)
    """
)

EXPERIMENT = textwrap.dedent(
    """\
    name: %(name)s
    trainable:
      command: [%(python)s, %(trainable)s]
    param_space:
      x: {grid_search: %(xs)s}
      %(y)s
    metric: %(metric)s
    mode: %(mode)s
    resources_per_trial:
      cpu: 1
    max_concurrent_trials: 4
    results_dir: %(results)s
    """
)


def front_of(trials, objectives):
    """The trial ids of the non-dominated trials (brute force over their last results)."""
    done = [t for t in trials if t["status"] == "TERMINATED"]
    loss = {
        t["trial_id"]: [
            -t["last_result"][m] if mode == "max" else t["last_result"][m] for m, mode in objectives
        ]
        for t in done
    }

    def dominates(a, b):
        return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))

    return {i for i, a in loss.items() if not any(dominates(b, a) for b in loss.values())}


def run_to_the_end(test, journal, n):
    return wait_for(
        "the %d trials of %s to finish" % (n, journal),
        lambda: (
            lambda ts: ts if len(ts) == n and all(t["status"] == "TERMINATED" for t in ts) else None
        )(test.suite.tunectl_json("ls", "-e", journal)),
        90,
        0.2,
    )


def open_panel(driver, base_url, journal):
    driver.get("%s/experiments/%s" % (base_url, journal))
    WebDriverWait(driver, 15).until(
        lambda d: js(
            d,
            "const s = document.getElementById('pareto');"
            "return !s.hidden && !!Chart.getChart('pareto-chart');",
        )
    )


def main():
    with BrowserTest(
        "tunebus-pareto-",
        ("pareto-scatter.png", "pareto-parallel.png"),
        "failure-pareto.png",
        "gate/release",
    ) as test:
        trainable = test.write(
            "trainable.py",
            TRAINABLE % {"clients": os.path.join(base.SOURCE_DIR, "clients", "python")},
        )
        values = {
            "python": sys.executable,
            "trainable": trainable,
            "xs": XS,
            "results": test.path("results"),
        }
        two = test.submit(
            EXPERIMENT % dict(values, name="pareto2", y="", metric="[f1, f2]", mode="[min, min]"),
            "pareto2",
        )
        three_file = test.write(
            "three.yaml",
            EXPERIMENT
            % dict(
                values,
                name="pareto3",
                y="y: {grid_search: [0.0, 1.0]}",
                metric="[f1, f2, f3]",
                mode="[min, min, max]",
            ),
        )
        submitted = subprocess.run(
            [test.tunectl, "run", three_file, "--connect", test.suite.control, "--detach"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert submitted.returncode == 0, submitted.stderr
        three = wait_for(
            "pareto3 in /api/experiments",
            lambda: next(
                (
                    x["journal"]
                    for x in test.suite.api("/api/experiments")
                    if x["name"] == "pareto3"
                ),
                None,
            ),
            20,
        )
        trials2 = run_to_the_end(test, two, len(XS))
        trials3 = run_to_the_end(test, three, 2 * len(XS))
        truth2 = front_of(trials2, [("f1", "min"), ("f2", "min")])
        truth3 = front_of(trials3, [("f1", "min"), ("f2", "min"), ("f3", "max")])
        print("front of pareto2 (brute force over tunectl ls):", sorted(truth2))
        print("front of pareto3:", sorted(truth3))
        best = test.suite.tunectl_json("best", "-e", two)
        assert {t["trial_id"] for t in best} == truth2, best

        driver = test.browser()
        base_url = test.suite.http.rstrip("/")

        # Two objectives: a scatter, the front marked and joined in the order of f1.
        open_panel(driver, base_url, two)
        chart = js(
            driver,
            "const c = Chart.getChart('pareto-chart'); return {type: c.config.type,"
            " labels: c.data.datasets.map((d) => d.label),"
            " front: c.data.datasets[0].data.map((p) => [p.trial_id, p.x, p.y]),"
            " others: c.data.datasets[1].data.map((p) => p.trial_id),"
            " line: c.data.datasets[0].showLine,"
            " x: c.options.scales.x.title.text, y: c.options.scales.y.title.text};",
        )
        print("scatter:", chart)
        assert chart["type"] == "scatter" and chart["line"] is True, chart
        assert chart["labels"] == ["Pareto front", "other trials"], chart
        assert chart["x"] == "f1 (min)" and chart["y"] == "f2 (min)", chart
        assert {p[0] for p in chart["front"]} == truth2, chart
        assert [p[1] for p in chart["front"]] == sorted(p[1] for p in chart["front"]), chart
        assert set(chart["others"]) == {t["trial_id"] for t in trials2} - truth2, chart
        rows = js(
            driver,
            "return [...document.querySelectorAll('#pareto-table tbody tr')]"
            ".map((r) => r.dataset.trial);",
        )
        assert rows == [p[0] for p in chart["front"]], rows
        pixels = canvas_pixels(driver, "pareto-chart", RED)
        print("front's red pixels:", pixels, "note:", text_of(driver, "#pareto-note"))
        assert pixels > 50, pixels
        driver.execute_script("document.getElementById('pareto').scrollIntoView();")
        test.shot("pareto-scatter.png")

        # Three objectives: parallel coordinates, one line per trial, the front's red.
        open_panel(driver, base_url, three)
        chart = js(
            driver,
            "const c = Chart.getChart('pareto-chart'); return {type: c.config.type,"
            " axes: c.data.labels.map((l) => l[0]),"
            " lines: c.data.datasets.map((d) => [d.label, d.data.length, d.borderColor])};",
        )
        print("parallel coordinates: axes %s, %d lines" % (chart["axes"], len(chart["lines"])))
        assert chart["type"] == "line", chart
        assert chart["axes"] == ["f1 (min)", "f2 (min)", "f3 (max)"], chart
        assert len(chart["lines"]) == len(trials3), chart
        assert {n for _, n, _ in chart["lines"]} == {3}, chart
        assert {label for label, _, colour in chart["lines"] if colour == RED} == truth3, chart
        assert canvas_pixels(driver, "pareto-chart", RED) > 50
        driver.execute_script("document.getElementById('pareto').scrollIntoView();")
        test.shot("pareto-parallel.png")


if __name__ == "__main__":
    main()
