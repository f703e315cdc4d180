"""Checks README.md, the front door.

Links: every relative link (and image) names a file of the tree, and a link's `#anchor` into a
Markdown file names one of its headings (GitHub's slugs, as the site's myst_heading_anchors makes
them). A broken one prints `README.md:LINE: ...` and fails.

Copies: a code block whose paragraph before it starts with a path in backticks (`` `examples/
digits/experiment.yaml`, which ... ``) must be that file as it stands, less its opening comment
lines, so the README shows what the command runs.

The first command's build figure: the README's line `... build (N steps) took **M min S s** ...
commit C ...` is what CI's fresh-clone build printed. Given --build-report (scripts/build-report's
JSON, which scripts/setup writes to build/build-report-setup.json), a build that started from
nothing without a compiler cache (as on a new machine) is compared with it: more than a factor
2 apart fails, naming both and the line to write; more than 1.25 apart prints that line as a
warning. Any other build (incremental, ccache answering, or on a host whose load average was over
twice its cores) is not compared, and it says so.

Usage: python3 scripts/readme_check.py README.md [--build-report build/build-report-setup.json]
"""

import json
import os
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    """The anchors of a Markdown file's headings (outside code fences)."""
    found, fenced = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and re.match(r"#{1,6} ", line):
                found.add(slug(line.lstrip("#")))
    return found


def check(readme):
    base = os.path.dirname(os.path.abspath(readme))
    broken, count = [], 0
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    fenced = False
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            count += 1
            path, _, anchor = target.partition("#")
            full = os.path.join(base, path)
            if not os.path.exists(full):
                broken.append("%s:%d: %s: no such file" % (readme, number, path))
            elif anchor and path.endswith(".md") and anchor not in anchors(full):
                broken.append("%s:%d: %s: no heading #%s" % (readme, number, path, anchor))
    return broken, count


def check_copies(readme):
    """Code blocks that say which file they copy, against that file (without its leading `#`
    comment lines). Returns the mismatches."""
    base = os.path.dirname(os.path.abspath(readme))
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    problems, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```") and lines[i] != "```":
            j = i + 1
            while j < len(lines) and lines[j] != "```":
                j += 1
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            named = re.match(r"`([^`\s]+)`", lines[k].strip()) if k >= 0 else None
            path = named and os.path.join(base, named.group(1))
            if path and os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    text = f.read().split("\n")
                while text and text[0].startswith("#"):
                    text.pop(0)
                if "\n".join(lines[i + 1 : j]).strip() != "\n".join(text).strip():
                    problems.append(
                        "%s:%d: the block is not %s as it stands (less its opening comments)"
                        % (readme, i + 1, named.group(1))
                    )
            i = j
        i += 1
    return problems


FIGURE = re.compile(
    r"build \((?P<steps>\d+) steps\) took \*\*(?P<min>\d+) min (?P<sec>\d+) s\*\*.{0,200}?"
    r"commit (?P<commit>[0-9a-f]{7,})",
    re.S,
)
FAIL_FACTOR = 2.0
WARN_FACTOR = 1.25
LOADED = 2.0  # a load average over 2x the cores: the wall time says more of the host than the build


def minutes_seconds(seconds):
    seconds = int(round(seconds))
    return "%d min %02d s" % (seconds // 60, seconds % 60)


def check_figure(readme, report_path):
    """Compares the README's first-command build figure with a build report. Returns a list of
    failures (empty when it holds or was not compared)."""
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    match = FIGURE.search(text)
    if match is None:
        return [
            "%s: no first-command figure (`build (N steps) took **M min S s** ... commit C`)"
            % readme
        ]
    number = text[: match.start()].count("\n") + 1
    stated = int(match.group("min")) * 60 + int(match.group("sec"))
    if not os.path.exists(report_path):
        print("readme_check: build figure not compared: no %s" % report_path)
        return []
    with open(report_path, encoding="utf-8") as f:
        report = json.load(f)
    if not report.get("fresh") or report.get("compiler_cache", True):
        print(
            "readme_check: build figure not compared: %s is of a build that %s"
            % (
                report_path,
                "did not start from nothing" if not report.get("fresh") else "ccache answered",
            )
        )
        return []
    measured = report["wall_s"]
    machine = report.get("machine", {})
    load, cores = report.get("load_5min"), machine.get("cores") or 1
    if load is not None and load > LOADED * cores:
        print(
            "readme_check: build figure not compared: the host's load average was %.1f on %d cores "
            "as the build ended (over %.0fx: other work inflated its wall time)"
            % (load, cores, LOADED)
        )
        return []
    line = "build (%d steps) took **%s** ... commit %s, %s, %s cores (%s)" % (
        report["steps"],
        minutes_seconds(measured),
        report.get("commit", "?"),
        report.get("date", "?"),
        machine.get("cores", "?"),
        machine.get("cpu_model", "?"),
    )
    factor = max(measured, 1.0) / max(stated, 1.0)
    factor = max(factor, 1.0 / factor)
    summary = "README.md:%d says %s (commit %s); this fresh build took %s" % (
        number,
        minutes_seconds(stated),
        match.group("commit"),
        minutes_seconds(measured),
    )
    if factor > FAIL_FACTOR:
        return ["%s: %.2fx apart (over %.1fx); write: %s" % (summary, factor, FAIL_FACTOR, line)]
    if factor > WARN_FACTOR:
        print("readme_check: warning: %s, %.2fx apart; write: %s" % (summary, factor, line))
    else:
        print("readme_check: %s: within %.2fx" % (summary, WARN_FACTOR))
    return []


def main():
    args = sys.argv[1:]
    report = None
    if "--build-report" in args:
        i = args.index("--build-report")
        report = args[i + 1]
        del args[i : i + 2]
    readme = args[0] if args else "README.md"
    broken, count = check(readme)
    broken += check_copies(readme)
    if report is not None:
        broken += check_figure(readme, report)
    for b in broken:
        print(b)
    if broken:
        print("readme_check: %d problems in %s" % (len(broken), readme))
        return 1
    print("readme_check: %d relative links of %s resolve" % (count, readme))
    return 0


if __name__ == "__main__":
    sys.exit(main())
