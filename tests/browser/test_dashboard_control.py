#!/usr/bin/python3
"""Control in the scheduler's dashboard (docs/how-to/dashboard.md "Control") in a real browser:
Debian's
chromium, headless, driven by chromium-driver through python3-selenium, against a real suite
(`tunectl up --http 127.0.0.1:0`) on loopback running three command trainables that keep running
until the test lets them finish.

It checks that
  - a browser that is not signed in sees no control (no trial buttons, no control bar) but the
    action log, and that a POST to a control route is refused with 403 and changes nothing:
    without a session, with a made-up session, with an operator's session but no or a wrong CSRF
    token, cross-origin, and with a viewer's session; a tampered token does not sign in;
  - an operator signs in with the URL `tunectl dashboard-token` prints, clicks stop on a running
    trial, and the trial becomes TERMINATED as `tunectl show` reports it (and the page shows);
    sets the experiment's weight in the control bar, and `tunectl status` reports it; interrupts
    the experiment (accepting the page's confirmation), and `tunectl status` reports INTERRUPTED;
  - each action shows in the page's action log (who, what, result) and in the scheduler's log
    (the line naming the token's name and role, the action and the outcome), and the refused
    viewer's attempt in the scheduler's log too;
  - signing out removes the control and ends the session (its cookie is refused afterwards).
Screenshots go to $TUNEBUS_SCREENSHOT_DIR (ctest: <build>/dashboard-control-screenshots).

Reuses test_dashboard.py's suite, browser and page helpers. Exit 77 (skipped) without selenium,
chromium or chromedriver, except under CI=true. Every process started here is stopped, each wait
is bounded.
"""

import http.client
import json
import os
import re
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ["TUNEBUS_LOG_LEVEL"] = "info"  # the scheduler's action lines are info lines
import test_dashboard as base  # noqa: E402  (skips here, as there, without the browser)
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


class Http:
    """Plain HTTP requests to the dashboard, without redirects or cookies of their own."""

    def __init__(self, url):
        parsed = urllib.parse.urlparse(url)
        self.host, self.port = parsed.hostname, parsed.port
        self.origin = "http://%s:%d" % (self.host, self.port)

    def request(self, method, path, headers=None, body=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            data = r.read()
            try:
                payload = json.loads(data)
            except ValueError:
                payload = data.decode(errors="replace")
            return r.status, r.getheaders(), payload
        finally:
            conn.close()

    def sign_in(self, token):
        """The session cookie ("tunebus_session=...") a sign-in with `token` sets, or None, and
        the response's status."""
        status, headers, _ = self.request("GET", "/login?token=" + urllib.parse.quote(token))
        for name, value in headers:
            if name.lower() == "set-cookie" and value.startswith("tunebus_session="):
                return value.split(";")[0], status
        return None, status

    def csrf(self, cookie):
        status, _, session = self.request("GET", "/api/session", {"Cookie": cookie})
        assert status == 200 and session["signed_in"], session
        return session["csrf"]


def main():
    with base.BrowserTest(
        "tunebus-dashboard-control-",
        ("viewer.png", "operator.png", "operator-stopped.png", "signed-out.png"),
        "failure.png",
        "triggers/finish",
    ) as test:
        trainable = test.write(
            "trainable.py",
            base.TRAINABLE
            % {"clients": os.path.join(base.SOURCE_DIR, "clients", "python"), "fast": 3},
        )
        experiment = base.EXPERIMENT % {
            "python": sys.executable,
            "triggers": os.path.dirname(test.release),
            "trainable": trainable,
            "results": test.path("results"),
        }
        journal = test.submit(experiment.replace("name: dashboard", "name: control"), "control")
        suite = test.suite
        running = lambda: [
            t["trial_id"]
            for t in suite.tunectl_json("ls", "-e", journal)
            if t["status"] == "RUNNING"
        ]
        base.wait_for("3 RUNNING trials", lambda: len(running()) == 3, 60, 0.2)
        status_of = lambda trial: suite.tunectl_json("show", trial, "-e", journal)["status"]
        target, other = sorted(running())[:2]
        h = Http(suite.http)
        page = "/experiments/" + journal

        # --- A browser that is not signed in: read-only, no control.
        driver = test.browser()
        base_url = suite.http.rstrip("/")
        driver.get(base_url + page)
        WebDriverWait(driver, 10).until(lambda d: base.text_of(d, "#live") == "live")
        WebDriverWait(driver, 10).until(lambda d: len(base.trial_ids(d)) == 3)
        WebDriverWait(driver, 10).until(lambda d: base.text_of(d, "#sign-in") == "sign in")
        WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.ID, "action-log"))
        buttons = driver.find_elements(By.CSS_SELECTOR, "button.trial-action")
        bars = driver.find_elements(By.ID, "control")
        assert not buttons and not bars, (len(buttons), len(bars))
        print(
            "not signed in: %d trial buttons, %d control bars, sign-in link shown"
            % (len(buttons), len(bars))
        )
        test.shot("viewer.png")

        # --- POSTs that must be refused, each 403, none changing anything.
        stop_path = "/api/experiments/%s/trials/%s/stop" % (journal, target)
        same = {"Origin": h.origin, "Content-Type": "application/json"}
        operator = suite.tunectl_json(
            "dashboard-token", "--role", "operator", "--name", "alice", "--ttl", "1h"
        )
        assert operator["role"] == "operator" and operator["name"] == "alice", operator
        assert operator["login_url"].startswith(base_url + "/login?token=tbt1."), operator
        viewer = suite.tunectl_json("dashboard-token", "--role", "viewer", "--name", "bob")
        op_cookie, op_status = h.sign_in(operator["token"])
        assert op_cookie and op_status == 303, op_status
        op_csrf = h.csrf(op_cookie)
        viewer_cookie, _ = h.sign_in(viewer["token"])
        viewer_csrf = h.csrf(viewer_cookie)
        # One character of the claims changed: the tag no longer verifies.
        at = len("tbt1.") + 8
        token = operator["token"]
        tampered = token[:at] + ("B" if token[at] == "A" else "A") + token[at + 1 :]
        tampered_cookie, tampered_status = h.sign_in(tampered)
        assert tampered_cookie is None and tampered_status == 403, tampered_status
        print("tampered token: sign-in refused with", tampered_status)
        refused = {
            "no session": dict(same),
            "made-up session": dict(same, Cookie="tunebus_session=madeup", **{"X-CSRF-Token": "x"}),
            "operator, no CSRF token": dict(same, Cookie=op_cookie),
            "operator, wrong CSRF token": dict(
                same, Cookie=op_cookie, **{"X-CSRF-Token": viewer_csrf}
            ),
            "operator, cross-origin": dict(
                same, Cookie=op_cookie, Origin="http://evil.example", **{"X-CSRF-Token": op_csrf}
            ),
            "viewer session": dict(same, Cookie=viewer_cookie, **{"X-CSRF-Token": viewer_csrf}),
        }
        for what, headers in refused.items():
            status, _, body = h.request("POST", stop_path, headers, "{}")
            print("POST stop, %s: %d %s" % (what, status, body.get("error")))
            assert status == 403, (what, status, body)
        weight_path = "/api/experiments/%s/weight" % journal
        status, _, body = h.request("POST", weight_path, same, json.dumps({"weight": 9}))
        assert status == 403, (status, body)
        assert status_of(target) == "RUNNING", status_of(target)
        summary = suite.tunectl_json("status", "-e", journal)
        assert summary["weight"] == 1, summary["weight"]
        print(
            "after the refused POSTs: %s is %s, weight %s (unchanged)"
            % (target, status_of(target), summary["weight"])
        )

        # --- An operator signs in with the printed URL and stops a running trial.
        driver.get(operator["login_url"])
        WebDriverWait(driver, 10).until(lambda d: base.text_of(d, "#session .who") == "alice")
        driver.get(base_url + page)
        WebDriverWait(driver, 10).until(lambda d: base.text_of(d, "#live") == "live")
        stop_button = 'tr[data-trial-id="%s"] button.trial-action[data-action="stop"]' % target
        WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, stop_button))
        assert driver.find_elements(By.ID, "control"), "no control bar for the operator"
        test.shot("operator.png")
        base.click(driver, stop_button)
        base.wait_for(
            "%s TERMINATED in tunectl show" % target,
            lambda: status_of(target) == "TERMINATED",
            20,
            0.1,
        )
        print(
            "operator clicked stop on %s: tunectl show says %s; %s is %s"
            % (target, status_of(target), other, status_of(other))
        )
        assert status_of(other) == "RUNNING"
        row_status = 'tr[data-trial-id="%s"] .status' % target
        WebDriverWait(driver, 10).until(lambda d: base.text_of(d, row_status) == "TERMINATED")
        WebDriverWait(driver, 10).until(
            lambda d: base.text_of(d, "#summary .count-TERMINATED") == "1"
        )
        log_row = '#action-log tr[data-action="stop_trial"][data-trial-id="%s"]' % target
        WebDriverWait(driver, 10).until(lambda d: base.text_of(d, log_row))
        print(
            "action log:",
            base.text_of(driver, log_row + " td:nth-child(2)"),
            "|",
            base.text_of(driver, log_row + " td.result"),
        )
        assert base.text_of(driver, log_row + " td:nth-child(2)") == "alice (operator)"
        assert base.text_of(driver, log_row + " td.result").startswith("ok: "), base.text_of(
            driver, log_row + " td.result"
        )

        # The weight, from the control bar.
        weight = driver.find_element(By.ID, "weight-input")
        weight.clear()
        weight.send_keys("2.5")
        base.click(driver, "#set-weight")
        base.wait_for(
            "weight 2.5 in tunectl status",
            lambda: suite.tunectl_json("status", "-e", journal)["weight"] == 2.5,
            10,
            0.1,
        )
        WebDriverWait(driver, 10).until(
            lambda d: base.text_of(d, '#action-log tr[data-action="set_weight"] td.result')
        )
        print(
            "set weight: tunectl status says %s; log: %s"
            % (
                suite.tunectl_json("status", "-e", journal)["weight"],
                base.text_of(driver, '#action-log tr[data-action="set_weight"] td.result'),
            )
        )
        test.shot("operator-stopped.png")

        # Interrupting the experiment from the control bar (after the browser's confirmation).
        base.click(driver, "#interrupt-experiment")
        WebDriverWait(driver, 5).until(lambda d: d.switch_to.alert)
        driver.switch_to.alert.accept()
        base.wait_for(
            "the experiment INTERRUPTED in tunectl status",
            lambda: suite.tunectl_json("status", "-e", journal)["status"] == "INTERRUPTED",
            20,
            0.1,
        )
        WebDriverWait(driver, 10).until(
            lambda d: base.text_of(
                d, '#action-log tr[data-action="interrupt_experiment"] td.result'
            )
        )
        print(
            "interrupt: tunectl status says %s, %s is %s; log: %s"
            % (
                suite.tunectl_json("status", "-e", journal)["status"],
                other,
                status_of(other),
                base.text_of(
                    driver, '#action-log tr[data-action="interrupt_experiment"] td.result'
                ),
            )
        )
        other_status = status_of(other)

        # The scheduler's log names the token's holder and role, the action and the outcome.
        log = suite.log_text()
        stop_line = next(
            (
                line
                for line in log.splitlines()
                if re.search(
                    r"Dashboard action by alice \(operator\): stop_trial of "
                    r"trial %s .*: done, trial %s is TERMINATED"
                    % (re.escape(target), re.escape(target)),
                    line,
                )
            ),
            None,
        )
        assert stop_line, log
        print("scheduler log:", stop_line.strip())
        weight_line = next(
            (
                line
                for line in log.splitlines()
                if "Dashboard action by alice (operator): set_weight 2.5" in line
            ),
            None,
        )
        assert weight_line, log
        assert (
            "Dashboard action by alice (operator): interrupt_experiment of experiment" in log
        ), log
        refused_line = next(
            (
                line
                for line in log.splitlines()
                if "refused POST" in line and "bob (viewer)" in line
            ),
            None,
        )
        assert refused_line, log
        print("scheduler log:", refused_line.strip())

        # Signing out: no control, and the session's cookie no longer acts.
        browser_cookie = "tunebus_session=" + driver.get_cookie("tunebus_session")["value"]
        base.click(driver, "#sign-out")
        WebDriverWait(driver, 10).until(lambda d: base.text_of(d, "#sign-in") == "sign in")
        WebDriverWait(driver, 10).until(lambda d: len(base.trial_ids(d)) == 3)
        assert not driver.find_elements(By.CSS_SELECTOR, "button.trial-action")
        status, _, body = h.request(
            "POST",
            "/api/experiments/%s/trials/%s/stop" % (journal, other),
            dict(same, Cookie=browser_cookie, **{"X-CSRF-Token": op_csrf}),
            "{}",
        )
        assert status == 403 and status_of(other) == other_status, (status, body)
        print(
            "signed out: no trial buttons; the old cookie's POST: %d %s" % (status, body["error"])
        )
        test.shot("signed-out.png")


if __name__ == "__main__":
    main()
