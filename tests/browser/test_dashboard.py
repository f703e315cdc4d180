#!/usr/bin/python3
"""The scheduler's dashboard in a real browser (docs/how-to/dashboard.md): Debian's chromium,
headless,
driven by chromium-driver through python3-selenium, against a real suite (`tunectl up --http`)
on loopback running a real experiment of three command trainables.

Scenario: the trainables report 8 quick results each, then wait for trigger files, one result
per trigger. The test opens the experiments page and the experiment's page and checks:
  - the experiments page shows the experiment with its status, counts and best metric;
  - the trial table shows exactly the trials `tunectl ls` lists, sorts by the metric like the
    API, and filters by status;
  - the best trial's learning curve is drawn: its Chart.js dataset holds its results and the
    canvas has pixels of the dataset's colour;
  - a result reaches the open page within 1 s of the trainable reporting it (kRounds results,
    each timed from the trainable's own clock to the moment the page's cell shows it);
  - browsing back and forth between the two pages (12 loads) never stalls a load: each page
    is live within 3 s and its document waited under 1 s for a connection (a left page closes
    its event stream, so the browser's 6 connections per host stay free);
  - the experiment ending shows on the experiments page without a reload.
Screenshots go to $TUNEBUS_SCREENSHOT_DIR (ctest: <build>/dashboard-screenshots), else the
test's temporary folder; the test prints where.

Run by ctest as browser.dashboard (tests/CMakeLists.txt) with /usr/bin/python3, which sees
Debian's python3-selenium. Exit 77 (skipped) without selenium, chromium or chromedriver, except
under CI=true, where that fails. Every process started here is stopped, each wait is bounded.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

from headless_chromium import chrome, missing, wait_for  # noqa: F401 (shared)

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROUNDS = 5  # results timed from the trainable to the page
LATENCY_LIMIT_S = 1.0
FAST_RESULTS = 8  # results each trial reports before it waits for triggers
SCREENSHOTS = (
    "experiments.png",
    "experiment.png",
    "experiment-live.png",
    "experiments-finished.png",
)


def skip_or_fail(why):
    if os.environ.get("CI") == "true":
        print("CI=true but the browser test cannot run: " + why)
        sys.exit(1)
    print("skipped: " + why)
    sys.exit(77)


if missing():
    skip_or_fail(missing())
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

TRAINABLE = textwrap.dedent(
    """\
    import os, sys, time
    sys.path.insert(0, %(clients)r)
    import tunebus

    config = tunebus.config()
    triggers = config["trigger_dir"]
    trial = os.environ["TUNEBUS_TRIAL_ID"]
    lr = config["lr"]
    score = lambda t: 1 - 1 / (1 + 10 * lr * t)
    t = 0
    for _ in range(%(fast)d):
        t += 1
        tunebus.report(score=score(t), reported_at_unix=time.time())
        time.sleep(0.05)
    # One result per trigger file <trial>.<n> (n = 1, 2, ...) until <triggers>/finish exists.
    n = 1
    while not os.path.exists(os.path.join(triggers, "finish")):
        if os.path.exists(os.path.join(triggers, "%%s.%%d" %% (trial, n))):
            t += 1
            n += 1
            tunebus.report(score=score(t), reported_at_unix=time.time())
        time.sleep(0.005)
    """
)

EXPERIMENT = textwrap.dedent(
    """\
    name: dashboard
    trainable:
      command: [%(python)s, %(trainable)s]
    param_space:
      lr: {grid_search: [0.01, 0.03, 0.1]}
      trigger_dir: %(triggers)s
    metric: score
    mode: max
    resources_per_trial:
      cpu: 1
    max_concurrent_trials: 3
    results_dir: %(results)s
    """
)


class Suite:
    """`tunectl up` with the dashboard on a free loopback port, in `work`."""

    def __init__(self, tunectl, work):
        self.tunectl = tunectl
        self.work = work
        ready = os.path.join(work, "ready.json")
        self.log = open(os.path.join(work, "suite.log"), "wb")
        self.proc = subprocess.Popen(
            [
                tunectl,
                "up",
                "--control",
                "tcp://127.0.0.1:*",
                "--events",
                "tcp://127.0.0.1:*",
                "--http",
                "127.0.0.1:0",
                "--ready-file",
                ready,
                "--data-dir",
                os.path.join(work, "store"),
                "--cpus",
                "4",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=work,
        )
        wait_for(
            "the suite's ready file",
            lambda: os.path.exists(ready) or self.proc.poll() is not None,
            30,
        )
        assert os.path.exists(ready), self.log_text()
        endpoints = json.load(open(ready))["endpoints"]
        self.control = endpoints["control"]
        self.http = endpoints["http"]

    def log_text(self):
        if not self.log.closed:
            self.log.flush()
        with open(os.path.join(self.work, "suite.log"), errors="replace") as f:
            return f.read()[-4000:]

    def tunectl_json(self, *args):
        out = subprocess.run(
            [self.tunectl, *args, "--connect", self.control, "-o", "json"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    def api(self, path):
        import urllib.request

        with urllib.request.urlopen(self.http.rstrip("/") + path, timeout=10) as r:
            return json.load(r)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


class BrowserTest:
    """The frame each browser test (tests/browser/test_dashboard*.py) runs in: its work folder,
    its screenshots, the suite, the browser, and their teardown.

    BrowserTest(prefix, screenshots, failure_screenshot, release):
      - `prefix`: the work folder's name prefix (tempfile.mkdtemp), `self.work`;
      - `screenshots`: the file names (.png) the test saves; the ones an earlier run left in the
        screenshot folder `self.shots` ($TUNEBUS_SCREENSHOT_DIR, else work/screenshots) are
        removed, and the ones present at the end are printed;
      - `failure_screenshot`: the file name saved from the open browser when the test fails;
      - `release`: a file path under the work folder (its folder is made here) whose existence
        lets the test's trainables finish; created on leaving, so that none keeps running.
    Raises AssertionError when there is no executable tunectl ($TUNEBUS_TUNECTL, else
    build/bin/tunectl).

    Used as `with BrowserTest(...) as t:`. On leaving, whether the body failed or not: saves
    `failure_screenshot` (on failure, with a browser open), quits the browser, creates `release`,
    stops the suite (SIGTERM, bounded waits), and on failure prints the tail of the suite's log
    and lets the exception through; on success removes the work folder unless the screenshots
    are in it, prints the screenshots and "OK".
    """

    def __init__(self, prefix, screenshots, failure_screenshot, release):
        self.tunectl = os.path.abspath(
            os.environ.get("TUNEBUS_TUNECTL") or os.path.join(SOURCE_DIR, "build", "bin", "tunectl")
        )
        assert os.access(self.tunectl, os.X_OK), "no tunectl at " + self.tunectl
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.shots = os.environ.get("TUNEBUS_SCREENSHOT_DIR") or os.path.join(
            self.work, "screenshots"
        )
        self.screenshots = set(screenshots) | {failure_screenshot}
        self.failure_screenshot = failure_screenshot
        os.makedirs(self.shots, exist_ok=True)
        for old in self.screenshots:
            if os.path.exists(os.path.join(self.shots, old)):
                os.remove(os.path.join(self.shots, old))
        print("screenshots:", self.shots)
        self.release = os.path.join(self.work, release)
        os.makedirs(os.path.dirname(self.release), exist_ok=True)
        self.suite = None
        self.driver = None

    def path(self, *parts):
        """A path under the work folder."""
        return os.path.join(self.work, *parts)

    def write(self, name, text):
        """Writes `text` to the file `name` of the work folder; returns its path."""
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)

    def shot(self, name):
        """Saves a screenshot of the browser as `name` (one of `screenshots`) in the folder."""
        assert name in self.screenshots, name
        self.driver.save_screenshot(os.path.join(self.shots, name))

    def submit(self, experiment, name):
        """Starts the suite (`Suite` in the work folder), writes `experiment` (YAML text) to
        work/experiment.yaml and submits it with `tunectl run --detach`; returns the journal id
        /api/experiments shows for the experiment `name` (within 20 s). Raises AssertionError
        when the suite does not start, tunectl run fails, or the experiment does not show."""
        self.suite = Suite(self.tunectl, self.work)
        print("suite up: control", self.suite.control, "dashboard", self.suite.http)
        submitted = subprocess.run(
            [
                self.tunectl,
                "run",
                self.write("experiment.yaml", experiment),
                "--connect",
                self.suite.control,
                "--detach",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert submitted.returncode == 0, submitted.stderr
        return wait_for(
            "the experiment in /api/experiments",
            lambda: next(
                (x["journal"] for x in self.suite.api("/api/experiments") if x["name"] == name),
                None,
            ),
            20,
        )

    def browser(self):
        """Opens the headless chromium (`chrome()`, scripts bounded to 10 s); returns its driver."""
        self.driver = chrome()
        self.driver.set_script_timeout(10)
        return self.driver

    def __enter__(self):
        return self

    def __exit__(self, failed, error, trace):
        try:
            if self.driver is not None:
                if failed:
                    self.driver.save_screenshot(os.path.join(self.shots, self.failure_screenshot))
                self.driver.quit()
        finally:
            open(self.release, "w").close()
            if self.suite is not None:
                self.suite.stop()
        if failed:
            if self.suite is not None:
                print("suite log:\n" + self.suite.log_text())
            return False
        if not self.shots.startswith(self.work):
            shutil.rmtree(self.work, ignore_errors=True)
        print(
            "screenshots:",
            sorted(n for n in os.listdir(self.shots) if n in self.screenshots),
            "in",
            self.shots,
        )
        print("OK")
        return False


def text_of(driver, selector):
    """The text of the element `selector` finds now, or None (the pages re-render their rows, so
    the test never holds an element across a refresh)."""
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;", selector
    )


def click(driver, selector):
    """A real click on `selector`, found again if a refresh replaced it meanwhile."""
    for attempt in range(5):
        try:
            return driver.find_element(By.CSS_SELECTOR, selector).click()
        except StaleElementReferenceException:
            time.sleep(0.05)
    raise AssertionError("%s kept being replaced" % selector)


def trial_ids(driver):
    return driver.execute_script(
        "return [...document.querySelectorAll('#trials tbody tr[data-trial-id]')]"
        ".map((r) => r.dataset.trialId);"
    )


def canvas_pixels(driver, canvas_id, colour):
    """Pixels of the canvas `canvas_id` within a small distance of `colour` (#rrggbb), opaque ones
    (alpha > 200) only."""
    return driver.execute_script(
        """
        const c = document.getElementById(arguments[0]);
        const [r, g, b] = [1, 3, 5].map((i) => parseInt(arguments[1].slice(i, i + 2), 16));
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) {
          if (d[i + 3] > 200 && Math.abs(d[i] - r) < 24 && Math.abs(d[i + 1] - g) < 24 &&
              Math.abs(d[i + 2] - b) < 24) n++;
        }
        return n;""",
        canvas_id,
        colour,
    )


def main():
    with BrowserTest("tunebus-dashboard-", SCREENSHOTS, "failure.png", "triggers/finish") as test:
        triggers = os.path.dirname(test.release)
        trainable = test.write(
            "trainable.py",
            TRAINABLE
            % {"clients": os.path.join(SOURCE_DIR, "clients", "python"), "fast": FAST_RESULTS},
        )
        journal = test.submit(
            EXPERIMENT
            % {
                "python": sys.executable,
                "triggers": triggers,
                "trainable": trainable,
                "results": test.path("results"),
            },
            "dashboard",
        )
        suite = test.suite
        trials = lambda: suite.api("/api/experiments/%s/trials?limit=100" % journal)["trials"]
        wait_for(
            "3 trials with %d results each" % FAST_RESULTS,
            lambda: len(trials()) == 3
            and all((t["training_iteration"] or 0) >= FAST_RESULTS for t in trials()),
            60,
            0.2,
        )
        listed = suite.tunectl_json("ls", "-e", journal)
        listed_ids = sorted(t["trial_id"] for t in listed)
        assert len(listed_ids) == 3, listed

        driver = test.browser()
        base = suite.http.rstrip("/")

        # The experiments page.
        driver.get(base + "/")
        row = 'tr[data-journal="%s"]' % journal
        WebDriverWait(driver, 10).until(lambda d: text_of(d, row + " td.counts") == "RUNNING 3")
        best_cell = text_of(driver, row + " td.best")
        assert "(score, max)" in best_cell, best_cell
        WebDriverWait(driver, 10).until(lambda d: text_of(d, "#live") == "live")
        test.shot("experiments.png")
        print(
            "experiments page: row",
            driver.execute_script(
                "return [...document.querySelector(arguments[0]).cells].map((c) => c.textContent)"
                ".join(' | ');",
                row,
            ),
        )

        # The experiment's page: the table shows the trials tunectl lists.
        driver.get("%s/experiments/%s" % (base, journal))
        WebDriverWait(driver, 10).until(lambda d: text_of(d, "#live") == "live")
        WebDriverWait(driver, 10).until(lambda d: trial_ids(d))
        shown = sorted(trial_ids(driver))
        assert shown == listed_ids, (shown, listed_ids)
        print("trial table shows", shown, "= tunectl ls")

        # Sorting by the metric, descending (two clicks): the API's order.
        header = '#trials th[data-sort="metric"]'
        click(driver, header)
        WebDriverWait(driver, 5).until(lambda d: "▲" in text_of(d, header))
        click(driver, header)
        WebDriverWait(driver, 5).until(lambda d: "▼" in text_of(d, header))
        expected = [
            t["trial_id"]
            for t in suite.api("/api/experiments/%s/trials?sort=-metric&limit=10" % journal)[
                "trials"
            ]
        ]
        WebDriverWait(driver, 5).until(lambda d: trial_ids(d) == expected)
        print("sorted by -metric:", expected)
        # Filtering by status: no PENDING trial, the 3 RUNNING ones.
        Select(driver.find_element(By.ID, "status-filter")).select_by_value("PENDING")
        WebDriverWait(driver, 5).until(lambda d: text_of(d, "#page-info") == "no trials")
        assert trial_ids(driver) == []
        Select(driver.find_element(By.ID, "status-filter")).select_by_value("RUNNING")
        WebDriverWait(driver, 5).until(lambda d: len(trial_ids(d)) == 3)
        print("status filter: PENDING 0 rows, RUNNING 3 rows")

        # The best trial's curve: drawn by Chart.js, visible on the canvas.
        best = suite.api("/api/experiments/" + journal)["best"]
        best_id = best["trial_id"]
        points = lambda: driver.execute_script(
            "const c = Chart.getChart('curve');"
            "const s = c && c.data.datasets.find((x) => x.label === arguments[0]);"
            "return s ? s.data.length : 0;",
            best_id,
        )
        WebDriverWait(driver, 10).until(lambda d: points() >= FAST_RESULTS)
        colour = driver.execute_script(
            "return Chart.getChart('curve').data.datasets"
            ".find((x) => x.label === arguments[0]).borderColor;",
            best_id,
        )
        drawn = canvas_pixels(driver, "curve", colour)
        print(
            "curve of %s: %d points, %d canvas pixels of its colour %s"
            % (best_id, points(), drawn, colour)
        )
        assert drawn > 100, drawn
        test.shot("experiment.png")

        # A result reaches the page within 1 s of being reported.
        cell = '#trials tr[data-trial-id="%s"] td.training_iteration' % best_id
        iteration = lambda: driver.execute_script(
            "const c = document.querySelector(arguments[0]); return c ? c.textContent : '';", cell
        )
        latencies = []
        for n in range(1, ROUNDS + 1):
            before = int(iteration())
            time.sleep(0.3)  # apart from the previous round's reloads
            triggered = time.time()
            open(os.path.join(triggers, "%s.%d" % (best_id, n)), "w").close()
            wait_for(
                "iteration %d of %s in the page" % (before + 1, best_id),
                lambda: iteration() == str(before + 1),
                5,
                0.005,
            )
            seen = time.time()
            shown_trial = suite.tunectl_json("show", best_id, "-e", journal)
            reported = shown_trial["last_result"]["reported_at_unix"]
            assert shown_trial["last_result"]["training_iteration"] == before + 1
            latencies.append(seen - reported)
            print(
                "result %d of %s: reported -> shown in the page %.0f ms (trigger -> shown %.0f ms)"
                % (before + 1, best_id, 1000 * (seen - reported), 1000 * (seen - triggered))
            )
        WebDriverWait(driver, 5).until(lambda d: points() >= FAST_RESULTS + ROUNDS)
        print(
            "result -> page latency over %d results: max %.0f ms, mean %.0f ms"
            % (ROUNDS, 1000 * max(latencies), 1000 * sum(latencies) / len(latencies))
        )
        assert max(latencies) < LATENCY_LIMIT_S, latencies
        test.shot("experiment-live.png")

        # Back and forth between the pages: each load is live at once. A left page that kept
        # its event stream open (the browser's back/forward cache keeps left pages) would hold
        # one of the 6 connections per host, and the 7th load would wait for one.
        for i in range(12):
            url = "%s/experiments/%s" % (base, journal) if i % 2 else base + "/"
            driver.get(url)
            try:
                WebDriverWait(driver, 3).until(lambda d: text_of(d, "#live") == "live")
            except Exception:
                raise AssertionError(
                    "load %d of %s: not live within 3 s (%r)" % (i, url, text_of(driver, "#live"))
                )
            stalled_ms = driver.execute_script(
                "const n = performance.getEntriesByType('navigation')[0];"
                "return n.connectStart ? n.connectStart - n.fetchStart : 0;"
            )
            assert stalled_ms < 1000, "load %d of %s waited %.0f ms for a connection" % (
                i,
                url,
                stalled_ms,
            )
        print("12 loads back and forth: each live within 3 s, none waited for a connection")

        # The end of the experiment shows on the open experiments page.
        driver.get(base + "/")
        WebDriverWait(driver, 10).until(lambda d: text_of(d, "#live") == "live")
        open(test.release, "w").close()
        status = lambda: text_of(driver, row + " .status")
        WebDriverWait(driver, 30).until(lambda d: status() == "FINISHED")
        counts = text_of(driver, row + " td.counts")
        assert counts == "TERMINATED 3", counts
        test.shot("experiments-finished.png")
        print("experiments page after the end:", status(), counts)


if __name__ == "__main__":
    main()
