#!/usr/bin/python3
"""The dashboard's what-if panel in a real browser (docs/how-to/whatif.md "The dashboard"): Debian's
chromium, headless, driven by chromium-driver through python3-selenium, against a real suite
(`tunectl up --http`) on loopback that ran a FIFO experiment of the built-in mock trainable.

Scenario: four trials of the mock curve acc(lr, t) = 1 - 1 / (1 + 10 lr t), 9 iterations each,
one at a time (lr 0.01, 0.1, 0.001, 0.2), so the results arrive trial after trial. Worked out by
hand (as tests/integration/whatif_test.cpp): ASHA grace_period 1, reduction_factor 3, max_t 9
stops lr 0.001 at rung 1 and keeps the others: 28 training iterations of 36, the actual best
(lr 0.2) kept, regret 0; with grace_period 3, lr 0.001 stops at 3: 30 iterations, so the sweep
over grace_period [1, 3] stars the first row. The test, on the finished experiment's page:
  - types the ASHA setting, replays, and reads the report table: 36 / 28 iterations, the
    actual best kept, 0 unknown beyond; every figure equal to `tunectl whatif -o json`'s;
  - types the sweep, replays, and reads the table: 28 and 30 iterations, the first row starred;
  - clicks the "ASHA sweep" preset: the form gets its grid, and its 9 rows star the row
    `tunectl whatif --sweep` names;
  - types pbt: the panel shows the scheduler's refusal.
Screenshots (whatif-report.png, whatif-sweep.png, and failure-whatif.png when it fails) go to
$TUNEBUS_SCREENSHOT_DIR, else the test's temporary folder.

Run by ctest as browser.dashboard_whatif (tests/CMakeLists.txt) with /usr/bin/python3. Exit 77
(skipped) without selenium, chromium or chromedriver, except under CI=true. Every process
started here is stopped; every wait is bounded.
"""

import json
import os
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_dashboard import BrowserTest, text_of, wait_for  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

EXPERIMENT = textwrap.dedent(
    """\
    name: whatif
    trainable: {builtin: mock}
    param_space:
      lr: {grid_search: [0.01, 0.1, 0.001, 0.2]}
      mock_iterations: 9
    metric: mean_accuracy
    mode: max
    max_concurrent_trials: 1
    results_dir: %(results)s
    """
)
ASHA = {"type": "asha", "grace_period": 1, "reduction_factor": 3, "max_t": 9}
SWEEP_BASE = {"type": "asha", "reduction_factor": 3, "max_t": 9}
SWEEP = {"grace_period": [1, 3]}
PRESET_SWEEP = {"grace_period": [1, 2, 4], "reduction_factor": [2, 3, 4]}


def whatif_cli(suite, journal, scheduler, sweep=None):
    args = [suite.tunectl, "whatif", journal, "--scheduler", json.dumps(scheduler)]
    if sweep is not None:
        args += ["--sweep", json.dumps(sweep)]
    out = subprocess.run(
        args + ["--connect", suite.control, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def replay(driver, scheduler, sweep):
    """Fills the form and clicks replay; waits for the panel's next answer (or error)."""
    before = driver.execute_script(
        "return document.getElementById('whatif-result').dataset.replayed"
    )
    for field, value in (("whatif-scheduler", scheduler), ("whatif-sweep", sweep)):
        box = driver.find_element(By.ID, field)
        box.clear()
        if value is not None:
            box.send_keys(value if isinstance(value, str) else json.dumps(value))
    driver.find_element(By.ID, "whatif-run").click()
    WebDriverWait(driver, 30).until(
        lambda d: d.execute_script(
            "return document.getElementById('whatif-result').dataset.replayed"
        )
        != before
        or (text_of(d, "#whatif-error") or "") != ""
    )


def cell(driver, row, side):
    return text_of(driver, '#whatif-report tr[data-row="%s"] td[data-side="%s"]' % (row, side))


def sweep_rows(driver):
    return driver.execute_script(
        "return [...document.querySelectorAll('#whatif-sweep tbody tr')].map((r) => ({"
        "  index: Number(r.dataset.index), cheapest: r.classList.contains('cheapest'),"
        "  cells: [...r.cells].map((c) => c.textContent)}));"
    )


def main():
    with BrowserTest(
        "tunebus-whatif-",
        ("whatif-report.png", "whatif-sweep.png"),
        "failure-whatif.png",
        "gate/release",
    ) as test:
        journal = test.submit(EXPERIMENT % {"results": test.path("results")}, "whatif")
        suite = test.suite
        wait_for(
            "the experiment to finish",
            lambda: suite.tunectl_json("status", "-e", journal).get("finished") is True,
            60,
            0.2,
        )
        expected = whatif_cli(suite, journal, ASHA)
        print("tunectl whatif:", {k: expected[k] for k in ("actual", "replay", "regret")})
        assert expected["actual"]["training_iterations"] == 36, expected["actual"]
        assert expected["replay"]["training_iterations"] == 28, expected["replay"]

        driver = test.browser()
        driver.get("%s/experiments/%s" % (suite.http.rstrip("/"), journal))
        WebDriverWait(driver, 10).until(
            lambda d: (text_of(d, "#whatif-note") or "").startswith("Replays")
        )

        # One replay: the report beside what happened, as tunectl prints it.
        replay(driver, ASHA, None)
        assert (text_of(driver, "#whatif-error") or "") == "", text_of(driver, "#whatif-error")
        assert cell(driver, "training_iterations", "actual") == "36"
        assert cell(driver, "training_iterations", "replay") == "28"
        assert cell(driver, "training_iterations", "saved") == "8"
        assert cell(driver, "best_final", "saved") == "regret 0", cell(
            driver, "best_final", "saved"
        )
        best = expected["actual"]["best_trial_id"]
        assert cell(driver, "best_trial_id", "actual") == best
        assert cell(driver, "best_trial_id", "replay") == expected["replay"]["best_trial_id"]
        fate = driver.find_element(By.ID, "whatif-fate")
        assert fate.get_attribute("data-fate") == "as_recorded", fate.text
        assert best in fate.text and "kept" in fate.text, fate.text
        counts = driver.find_element(By.ID, "whatif-counts")
        assert counts.get_attribute("data-unknown-beyond") == "0", counts.text
        assert counts.text.startswith("4 trials: 1 stopped"), counts.text
        test.shot("whatif-report.png")

        # A typed sweep: 28 and 30 iterations, the first (cheaper) starred.
        replay(driver, SWEEP_BASE, SWEEP)
        rows = sweep_rows(driver)
        print("sweep rows:", rows)
        assert [r["cells"][2] for r in rows] == ["28", "30"], rows
        assert [r["cheapest"] for r in rows] == [True, False], rows

        # The preset fills the form; its 9 rows star the row tunectl names.
        driver.find_element(By.CSS_SELECTOR, '[data-preset="ASHA sweep"]').click()
        assert json.loads(driver.find_element(By.ID, "whatif-sweep").get_attribute("value")) == (
            PRESET_SWEEP
        )
        replay(
            driver,
            driver.find_element(By.ID, "whatif-scheduler").get_attribute("value"),
            PRESET_SWEEP,
        )
        rows = sweep_rows(driver)
        cli = whatif_cli(suite, journal, {"type": "asha"}, PRESET_SWEEP)
        assert len(rows) == 9 == len(cli["rows"]), rows
        starred = [r["index"] for r in rows if r["cheapest"]]
        assert starred == (
            [cli["cheapest_keeping"]] if cli["cheapest_keeping"] is not None else []
        ), (
            starred,
            cli["cheapest_keeping"],
        )
        for r, c in zip(rows, cli["rows"]):
            assert r["cells"][3] == str(c["training_iterations"]), (r, c)
        test.shot("whatif-sweep.png")

        # pbt: the scheduler's refusal, shown.
        replay(driver, {"type": "pbt"}, None)
        error = text_of(driver, "#whatif-error") or ""
        assert "pbt cannot be replayed" in error, error


if __name__ == "__main__":
    main()
