#!/usr/bin/python3
"""The dashboard's trial page (docs/how-to/dashboard.md "One trial") in a real browser: Debian's
chromium, headless, driven by chromium-driver through python3-selenium, against a real suite
(`tunectl up --http 127.0.0.1:0`) on loopback. Helpers come from test_dashboard.py.

Scenario: an experiment of two command trainables (checkpoint_freq 2, keep_checkpoints_num 2).
Each prints known lines to stdout and stderr at each result, writes what it reports and each
checkpoint it saves into a ledger folder the test reads, and:
  - "ok" reports 6 results, then one more per trigger file until a finish file exists;
  - "fail" reports 3 results, then raises an exception (exit code 1: ERROR).
The test opens the ok trial's page from the experiment page's link and checks:
  - the config shown is the trial's config;
  - the results table holds exactly the rows the trainable reported (count, order, values);
  - the chart is drawn (its Chart.js dataset holds the results, the canvas has pixels of its
    colour), against time_total_s and another key when they are picked;
  - the stdout and stderr tails hold the printed lines;
  - a new result reaches the open page (table row, chart point, stdout line, the checkpoint it
    completes) through the event stream, without a reload;
  - the checkpoint downloaded with the page's link (a real download into a folder) is the same
    archive as the export route's, holds the files the trainable saved at that iteration, and
    the same files as `tunectl checkpoint export`; a checkpoint retention dropped is a 404;
then the failed trial's page shows its error and the traceback the worker reported.
Screenshots (trial.png, trial-live.png, trial-error.png; trial-failure.png when it fails) go to
$TUNEBUS_SCREENSHOT_DIR (ctest: <build>/dashboard-screenshots), else the test's temporary folder.

Run by ctest as browser.dashboard_trial (tests/CMakeLists.txt). Exit 77 (skipped) without
selenium, chromium or chromedriver, except under CI=true (test_dashboard.py's rule). Every
process started here is stopped, each wait is bounded.
"""

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import textwrap
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_dashboard as base  # noqa: E402 - the skip rule, Suite, chrome() and the waits

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

FAST_RESULTS = 6  # results the ok trial reports before it waits for triggers
FAIL_AFTER = 3  # results the fail trial reports before it raises

TRAINABLE = textwrap.dedent(
    """\
    import json, os, shutil, sys, time
    sys.path.insert(0, %(clients)r)
    import tunebus

    config = tunebus.config()
    trial = os.environ["TUNEBUS_TRIAL_ID"]
    ledger = os.path.join(config["ledger_dir"], trial)
    os.makedirs(ledger, exist_ok=True)

    def save(t):
        # The checkpoint: random bytes and a small JSON file; a copy goes to the ledger.
        folder = tunebus.checkpoint_dir()
        with open(os.path.join(folder, "model.bin"), "wb") as f:
            f.write(os.urandom(150000 + t))
        os.makedirs(os.path.join(folder, "sub"), exist_ok=True)
        with open(os.path.join(folder, "sub", "state.json"), "w") as f:
            json.dump({"trial": trial, "iteration": t}, f)
        copy = os.path.join(ledger, "checkpoint-%%d" %% t)
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(folder, copy)

    def step(t):
        print("stdout line %%d of %%s" %% (t, trial), flush=True)
        print("stderr line %%d of %%s" %% (t, trial), file=sys.stderr, flush=True)
        metrics = {"score": t * 0.125, "loss": 1.0 / (t + 1), "phase": "phase-%%d" %% t}
        with open(os.path.join(ledger, "reported.jsonl"), "a") as f:
            f.write(json.dumps(metrics) + "\\n")
        if tunebus.report(**metrics) == "checkpoint":
            save(t)

    if config["kind"] == "fail":
        for t in range(1, %(fail_after)d + 1):
            step(t)
            time.sleep(0.05)
        raise RuntimeError(
            "boom: trial %%s failed on purpose after %(fail_after)d results" %% trial)
    for t in range(1, %(fast)d + 1):
        step(t)
        time.sleep(0.05)
    # One result per trigger file <trial>.<n> until <triggers>/finish exists.
    t, n = %(fast)d, 1
    while not os.path.exists(os.path.join(config["trigger_dir"], "finish")):
        if os.path.exists(os.path.join(config["trigger_dir"], "%%s.%%d" %% (trial, n))):
            t, n = t + 1, n + 1
            step(t)
        time.sleep(0.01)
    """
)

EXPERIMENT = textwrap.dedent(
    """\
    name: trialpage
    trainable:
      command: [%(python)s, %(trainable)s]
    param_space:
      kind: {grid_search: [ok, fail]}
      trigger_dir: %(triggers)s
      ledger_dir: %(ledger)s
    metric: score
    mode: max
    checkpoint_freq: 2
    keep_checkpoints_num: 2
    resources_per_trial:
      cpu: 1
    max_concurrent_trials: 2
    results_dir: %(results)s
    """
)


def js_number(v):
    """A number as dashboard.js's fmt() shows it, for the values the trainable reports."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, int):
        return str(v)
    return "%s" % float("%.4g" % v)


def table_rows(driver):
    """The results table: [{column: cell text}] in order."""
    return driver.execute_script(
        """
        return [...document.querySelectorAll('#results tbody tr')].map((tr) =>
          Object.fromEntries([...tr.cells].map((td) => [td.dataset.key, td.textContent])));"""
    )


def chart_data(driver):
    return driver.execute_script(
        """
        const c = Chart.getChart('trial-chart');
        return c && c.data.datasets.length ? c.data.datasets[0].data.map((p) => [p.x, p.y]) : [];"""
    )


def full_page_screenshot(test, name):
    """Saves the screenshot `name` (test_dashboard.BrowserTest.shot) of the whole page: the
    window made as tall as the page (at most 4000 px) for it."""
    driver = test.driver
    size = driver.get_window_size()
    height = driver.execute_script("return document.documentElement.scrollHeight;")
    driver.set_window_size(size["width"], min(height + 150, 4000))
    test.shot(name)
    driver.set_window_size(size["width"], size["height"])


def reported(ledger, trial_id):
    with open(os.path.join(ledger, trial_id, "reported.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def files_of_tar(data):
    """{relative path: bytes} of the regular files of a tar archive's bytes."""
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for m in tar.getmembers():
            if m.isfile():
                out[os.path.normpath(m.name)] = tar.extractfile(m).read()
    return out


def files_of_folder(folder):
    out = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder)] = f.read()
    return out


def http_get(url):
    """(status, headers, body) of a GET, errors included."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def main():
    with base.BrowserTest(
        "tunebus-dashboard-trial-",
        ("trial.png", "trial-live.png", "trial-error.png"),
        "trial-failure.png",
        "triggers/finish",
    ) as test:
        triggers, ledger, downloads = (test.path(d) for d in ("triggers", "ledger", "downloads"))
        for d in (ledger, downloads):
            os.makedirs(d)
        trainable = test.write(
            "trainable.py",
            TRAINABLE
            % {
                "clients": os.path.join(base.SOURCE_DIR, "clients", "python"),
                "fast": FAST_RESULTS,
                "fail_after": FAIL_AFTER,
            },
        )
        journal = test.submit(
            EXPERIMENT
            % {
                "python": sys.executable,
                "triggers": triggers,
                "ledger": ledger,
                "trainable": trainable,
                "results": test.path("results"),
            },
            "trialpage",
        )
        suite = test.suite
        trials = lambda: suite.api("/api/experiments/%s/trials?limit=10" % journal)["trials"]
        by_kind = lambda: {t["config"]["kind"]: t for t in trials()}
        base.wait_for(
            "the ok trial's %d results and checkpoints 2 and 4, the fail trial in ERROR"
            % FAST_RESULTS,
            lambda: len(trials()) == 2
            and (by_kind()["ok"]["training_iteration"] or 0) >= FAST_RESULTS
            and [
                c["training_iteration"]
                for c in suite.tunectl_json("show", by_kind()["ok"]["trial_id"], "-e", journal)[
                    "checkpoints"
                ]
            ]
            == [2, 4]
            and by_kind()["fail"]["status"] == "ERROR",
            90,
            0.2,
        )
        ok_trial, fail_trial = by_kind()["ok"], by_kind()["fail"]
        ok_id, fail_id = ok_trial["trial_id"], fail_trial["trial_id"]
        api = "/api/experiments/%s/trials/%s" % (journal, ok_id)
        print("trials: ok", ok_id, "fail", fail_id)

        driver = test.browser()
        driver.execute_cdp_cmd(
            "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads}
        )
        root = suite.http.rstrip("/")

        # From the experiment page's trial table to the trial's page.
        driver.get("%s/experiments/%s" % (root, journal))
        link = '#trials tr[data-trial-id="%s"] td.trial_id a' % ok_id
        WebDriverWait(driver, 10).until(lambda d: base.text_of(d, link) == ok_id)
        base.click(driver, link)
        WebDriverWait(driver, 10).until(
            lambda d: d.current_url == "%s/experiments/%s/trials/%s" % (root, journal, ok_id)
        )
        WebDriverWait(driver, 10).until(lambda d: base.text_of(d, "#live") == "live")

        # The config.
        WebDriverWait(driver, 10).until(lambda d: base.text_of(d, "#config"))
        shown_config = json.loads(base.text_of(driver, "#config"))
        assert shown_config == ok_trial["config"], (shown_config, ok_trial["config"])
        print("config shown:", json.dumps(shown_config, sort_keys=True))
        assert base.text_of(driver, ".trial-status") == "RUNNING"

        # The results table: exactly the rows the trainable reported.
        def rows_match(expected):
            rows = table_rows(driver)
            return len(rows) == len(expected) and all(
                r.get("training_iteration") == str(i + 1)
                and r.get("score") == js_number(e["score"])
                and r.get("loss") == js_number(e["loss"])
                and r.get("phase") == e["phase"]
                for i, (r, e) in enumerate(zip(rows, expected))
            )

        expected = reported(ledger, ok_id)
        assert len(expected) == FAST_RESULTS, expected
        WebDriverWait(driver, 10).until(lambda d: rows_match(expected))
        columns = driver.execute_script(
            "return [...document.querySelectorAll('#results thead th')]"
            ".map((th) => th.textContent);"
        )
        print(
            "results table: %d rows = the %d the trainable reported; columns %s"
            % (len(table_rows(driver)), len(expected), columns)
        )
        assert columns[:3] == ["training_iteration", "score", "time_total_s"], columns

        # The chart: the metric against training_iteration, drawn on the canvas.
        WebDriverWait(driver, 10).until(lambda d: len(chart_data(d)) == FAST_RESULTS)
        data = chart_data(driver)
        assert data == [[i + 1, e["score"]] for i, e in enumerate(expected)], data
        colour = driver.execute_script(
            "return Chart.getChart('trial-chart').data.datasets[0].borderColor;"
        )
        drawn = base.canvas_pixels(driver, "trial-chart", colour)
        print(
            "chart: %d points of score vs training_iteration, %d canvas pixels of %s"
            % (len(data), drawn, colour)
        )
        assert drawn > 100, drawn
        # Another key against time_total_s.
        Select(driver.find_element(By.ID, "chart-y")).select_by_value("loss")
        Select(driver.find_element(By.ID, "chart-x")).select_by_value("time_total_s")
        times = [r["time_total_s"] for r in suite.api(api + "/results?offset=0&limit=100")["rows"]]
        WebDriverWait(driver, 5).until(
            lambda d: chart_data(d) == [[t, e["loss"]] for t, e in zip(times, expected)]
        )
        print("chart: loss vs time_total_s, %d points, x = the results' time_total_s" % len(times))
        Select(driver.find_element(By.ID, "chart-y")).select_by_value("score")
        Select(driver.find_element(By.ID, "chart-x")).select_by_value("training_iteration")

        # stdout and stderr.
        for stream in ("stdout", "stderr"):
            lines = ["%s line %d of %s" % (stream, t, ok_id) for t in range(1, FAST_RESULTS + 1)]
            WebDriverWait(driver, 10).until(
                lambda d: all(line in (base.text_of(d, "#" + stream) or "") for line in lines)
            )
            print(
                "%s tail shows the %d printed lines (%s)"
                % (stream, len(lines), base.text_of(driver, "#%s-info" % stream))
            )

        # The routes' paging: rows 3-5 of the results, the last whole line of stdout's last 40
        # bytes.
        page = suite.api(api + "/results?offset=2&limit=3")
        assert page["total"] == FAST_RESULTS and [r["phase"] for r in page["rows"]] == [
            e["phase"] for e in expected[2:5]
        ], page
        tail = suite.api(api + "/logs?stream=stdout&tail_bytes=40")
        last_line = "stdout line %d of %s\n" % (FAST_RESULTS, ok_id)
        assert tail["text"] == last_line and tail["offset"] == tail["size"] - len(last_line), tail
        print(
            "results?offset=2&limit=3: %s of %d; logs?tail_bytes=40: %r from offset %d of %d"
            % (
                [r["phase"] for r in page["rows"]],
                page["total"],
                tail["text"],
                tail["offset"],
                tail["size"],
            )
        )

        # Checkpoints 2 and 4 in the table.
        names = lambda: driver.execute_script(
            "return [...document.querySelectorAll('#checkpoints tbody tr')]"
            ".map((r) => r.dataset.checkpoint);"
        )
        WebDriverWait(driver, 10).until(lambda d: names() == ["00000002-a1", "00000004-a1"])
        full_page_screenshot(test, "trial.png")

        # Live: a new result reaches the table, the chart and stdout; it completes checkpoint 6,
        # which retention (keep 2) makes replace checkpoint 2.
        started = time.monotonic()
        open(os.path.join(triggers, "%s.1" % ok_id), "w").close()
        reported_after = base.wait_for(
            "the trainable's result %d" % (FAST_RESULTS + 1),
            lambda: (lambda r: r if len(r) == FAST_RESULTS + 1 else None)(reported(ledger, ok_id)),
            10,
        )
        WebDriverWait(driver, 10).until(lambda d: rows_match(reported_after))
        row_s = time.monotonic() - started
        WebDriverWait(driver, 10).until(lambda d: len(chart_data(d)) == FAST_RESULTS + 1)
        WebDriverWait(driver, 10).until(
            lambda d: "stdout line %d of %s" % (FAST_RESULTS + 1, ok_id)
            in base.text_of(d, "#stdout")
        )
        WebDriverWait(driver, 10).until(lambda d: names() == ["00000004-a1", "00000006-a1"])
        print(
            "live: result %d in the table %.0f ms after its trigger; chart %d points; "
            "stdout line %d; checkpoints now %s"
            % (FAST_RESULTS + 1, 1000 * row_s, len(chart_data(driver)), FAST_RESULTS + 1, names())
        )
        full_page_screenshot(test, "trial-live.png")

        # The download: the page's link, saved by the browser into `downloads`.
        base.click(driver, '#checkpoints tr[data-checkpoint="00000006-a1"] a.export')
        tar_name = "%s_checkpoint_00000006-a1.tar" % ok_id
        tar_path = os.path.join(downloads, tar_name)
        base.wait_for(
            "the download " + tar_path,
            lambda: os.path.exists(tar_path)
            and not any(n.endswith(".crdownload") for n in os.listdir(downloads)),
            30,
        )
        with open(tar_path, "rb") as f:
            downloaded = f.read()
        status, headers, exported = http_get(root + api + "/checkpoints/00000006-a1/export")
        assert status == 200, (status, exported[:300])
        assert headers["Content-Disposition"] == 'attachment; filename="%s"' % tar_name, headers
        assert downloaded == exported, (len(downloaded), len(exported))
        saved = files_of_folder(os.path.join(ledger, ok_id, "checkpoint-6"))
        in_tar = files_of_tar(downloaded)
        assert in_tar == saved, (sorted(in_tar), sorted(saved))
        tunectl_dir = test.path("tunectl-export")
        out = subprocess.run(
            [
                test.tunectl,
                "checkpoint",
                "export",
                ok_id,
                "--checkpoint",
                "00000006-a1",
                "--to",
                tunectl_dir,
                "-e",
                journal,
                "--connect",
                suite.control,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert files_of_folder(tunectl_dir) == saved
        print(
            "download %s: %d bytes (sha256 %s), = the export route's bytes; files %s = what the "
            "trainable saved at iteration 6 = tunectl checkpoint export"
            % (
                tar_name,
                len(downloaded),
                hashlib.sha256(downloaded).hexdigest()[:16],
                {k: len(v) for k, v in sorted(in_tar.items())},
            )
        )
        status, _, body = http_get(root + api + "/checkpoints/00000002-a1/export")
        assert status == 404, (status, body[:300])
        print("checkpoint 2 (dropped by keep_checkpoints_num 2): 404", json.loads(body)["error"])

        # The failed trial: its error and the traceback the worker reported.
        driver.get("%s/experiments/%s/trials/%s" % (root, journal, fail_id))
        WebDriverWait(driver, 10).until(lambda d: base.text_of(d, ".trial-status") == "ERROR")
        WebDriverWait(driver, 10).until(
            lambda d: driver.find_element(By.ID, "trial-error").is_displayed()
        )
        summary = base.text_of(driver, "#error-summary")
        error_text = base.text_of(driver, "#error-text")
        assert "exited with code 1" in summary, summary
        boom = "RuntimeError: boom: trial %s failed on purpose after %d results" % (
            fail_id,
            FAIL_AFTER,
        )
        assert "Traceback (most recent call last)" in error_text and boom in error_text, error_text
        WebDriverWait(driver, 10).until(lambda d: boom in (base.text_of(d, "#stderr") or ""))
        fail_rows = table_rows(driver)
        assert len(fail_rows) == FAIL_AFTER == len(reported(ledger, fail_id)), fail_rows
        print(
            "failed trial: %r; error.txt shows the traceback (%d chars) ending %r; %d result rows"
            % (summary, len(error_text), error_text.strip().splitlines()[-1], len(fail_rows))
        )
        full_page_screenshot(test, "trial-error.png")


if __name__ == "__main__":
    main()
