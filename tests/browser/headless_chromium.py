"""What the browser tests (tests/browser/test_dashboard*.py) and bench/dashboard_load.py share:
Debian's chromium, headless, driven by Debian's chromium-driver through python3-selenium, and
waiting on a condition with a bound. The caller asks missing() first and applies its own skip
rule."""
import os
import sys
import time

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def missing():
    """Why the browser cannot run here (no selenium for this Python, no chromium or
    chromedriver), or None when it can."""
    try:
        import selenium  # noqa: F401
    except ImportError as e:
        return "no selenium for %s (python3-selenium): %s" % (sys.executable, e)
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return "no %s (apt-get install chromium chromium-driver)" % path
    return None


def chrome():
    """A headless chromium with a 1400 x 1100 window, driven through chromedriver."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1100",
        "--no-first-run",
        "--disable-extensions",
    ):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def wait_for(what, predicate, timeout_s, interval_s=0.05):
    """The first truthy value of predicate(), polled every interval_s seconds; AssertionError
    naming `what` after timeout_s seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout_s, what))
        time.sleep(interval_s)
