"""Judges a benchmark run against bench/floors.json: bench/run --quick runs it
on its JSON lines, so a speed regression fails CI instead of passing silently.

The rule: each floor names one line of the run (its "benchmark" and every field in "match" equal),
a figure of that line and which way is better. A "higher" figure must be >= its floor, a "lower"
one <= its floor (a ceiling). A floor fails when its figure is on the wrong side, is not a number,
or no line of the run matches (a benchmark that stopped reporting fails too), except for a floor
marked "optional": true, which is skipped then (the build benchmark reports only after a fresh
build, bench/build_cost.py); when several lines match, the worst of them is judged. Lines of the
run that are not JSON objects are skipped.

Prints one line per floor (ok or FAIL, benchmark[match], figure, measured, floor) and exits 0 when
every floor holds, 1 when one fails, 2 when a file is missing or the floors file is malformed.

--update rewrites FLOORS_JSON's floors from the run instead: half the figure where higher is
better, twice it where lower is better, to 3 significant figures and one unit inside (so a 2x
regression of that figure fails, by ~1%); and its "measured" commit, date and run. It changes
nothing when a floor's line or figure is missing from the run.

Usage: /usr/bin/python3 bench/check_floors.py [--update] FLOORS_JSON RUN_JSONL
Standard library only.
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys

ENTRY_KEYS = {"benchmark", "match", "figure", "better", "floor"}
OPTIONAL_KEYS = {"optional"}
MARGIN = 2.0  # a floor is the measured figure / 2 (higher is better) or x 2 (lower is better)


class Malformed(Exception):
    pass


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def load_floors(path):
    """The floors file's object; raises Malformed saying what is wrong."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise Malformed("cannot read it: %s" % e.strerror)
    except ValueError as e:
        raise Malformed("not JSON: %s" % e)
    if not isinstance(doc, dict):
        raise Malformed("the top level is not an object")
    floors = doc.get("floors")
    if not isinstance(floors, list) or not floors:
        raise Malformed('no "floors" list (or an empty one)')
    for i, e in enumerate(floors):
        where = "floors[%d]" % i
        if not isinstance(e, dict):
            raise Malformed("%s is not an object" % where)
        missing = sorted(ENTRY_KEYS - set(e))
        unknown = sorted(set(e) - ENTRY_KEYS - OPTIONAL_KEYS)
        if missing or unknown:
            raise Malformed(
                "%s: %s"
                % (
                    where,
                    "; ".join(
                        (["missing " + ", ".join(missing)] if missing else [])
                        + (["unknown " + ", ".join(unknown)] if unknown else [])
                    ),
                )
            )
        if not isinstance(e["benchmark"], str) or not e["benchmark"]:
            raise Malformed("%s: benchmark is not a name" % where)
        if not isinstance(e["match"], dict) or any(
            isinstance(v, (dict, list)) for v in e["match"].values()
        ):
            raise Malformed("%s: match is not an object of field: value" % where)
        if not isinstance(e["figure"], str) or not e["figure"]:
            raise Malformed("%s: figure is not a field name" % where)
        if e["better"] not in ("higher", "lower"):
            raise Malformed(
                '%s: better is %s, not "higher" or "lower"' % (where, json.dumps(e["better"]))
            )
        if not is_number(e["floor"]):
            raise Malformed("%s: floor is %s, not a number" % (where, json.dumps(e["floor"])))
        if not isinstance(e.get("optional", False), bool):
            raise Malformed("%s: optional is not true or false" % where)
    return doc


def read_run(path):
    """The JSON objects among the run's lines (other lines skipped)."""
    lines = []
    with open(path) as f:
        for text in f:
            try:
                obj = json.loads(text)
            except ValueError:
                continue
            if isinstance(obj, dict):
                lines.append(obj)
    return lines


def same(a, b):
    # JSON true is not 1 (Python's True == 1).
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def selector(e):
    m = ",".join(
        "%s=%s" % (k, json.dumps(v) if not isinstance(v, str) else v) for k, v in e["match"].items()
    )
    return "%s[%s]" % (e["benchmark"], m) if m else e["benchmark"]


def measure(e, run):
    """(worst figure of the matching lines or None, why none)."""
    lines = [
        r
        for r in run
        if same(r.get("benchmark"), e["benchmark"])
        and all(k in r and same(r[k], v) for k, v in e["match"].items())
    ]
    if not lines:
        return None, "missing: no line of the run matches"
    figures = [r.get(e["figure"]) for r in lines]
    bad = [f for f in figures if not is_number(f)]
    if bad:
        return None, "%s is %s, not a number" % (e["figure"], json.dumps(bad[0]))
    return (min(figures) if e["better"] == "higher" else max(figures)), None


def holds(e, value):
    return value >= e["floor"] if e["better"] == "higher" else value <= e["floor"]


def check(doc, run):
    """Prints one line per floor; returns the count of failed floors."""
    rows, failed = [], 0
    for e in doc["floors"]:
        value, why = measure(e, run)
        if why is not None and why.startswith("missing") and e.get("optional"):
            rows.append(("skip", selector(e), e["figure"], "no line: optional", ""))
            continue
        ok = why is None and holds(e, value)
        failed += not ok
        bound = "%s %.4g" % (">=" if e["better"] == "higher" else "<=", e["floor"])
        rows.append(
            (
                "ok" if ok else "FAIL",
                selector(e),
                e["figure"],
                why or "measured %.4g" % value,
                "floor " + bound,
            )
        )
    widths = [max([4 if i == 0 else 0] + [len(r[i]) for r in rows]) for i in range(4)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[4])
    return failed


def strict(value, better):
    """value to 3 significant figures, one unit above it for a floor (below it for a ceiling): a
    figure halved (doubled) from the one the floor came from is always on the wrong side."""
    if value <= 0:
        return 0
    scale = 10.0 ** (math.floor(math.log10(value)) - 2)
    units = value / scale  # 1e-9: 0.16 / 0.001 is 159.999...
    n = math.floor(units + 1e-9) + 1 if better == "higher" else math.ceil(units - 1e-9) - 1
    rounded = round(n * scale, 12)
    return int(rounded) if rounded == int(rounded) else rounded


def dumps(doc):
    """The floors file's layout: one floor per line."""
    out = ["{"]
    keys = [k for k in doc if k != "floors"]
    for k in keys:
        v = doc[k]
        if isinstance(v, list):
            out.append(
                "  %s: [\n%s\n  ]," % (json.dumps(k), ",\n".join("    " + json.dumps(x) for x in v))
            )
        else:
            out.append("  %s: %s," % (json.dumps(k), json.dumps(v)))
    out.append('  "floors": [\n%s\n  ]' % ",\n".join("    " + json.dumps(e) for e in doc["floors"]))
    out.append("}")
    return "\n".join(out) + "\n"


def update(path, doc, run_path, run):
    """Rewrites the floors from the run; returns the count of floors it could not measure."""
    missing = 0
    for e in doc["floors"]:
        value, why = measure(e, run)
        if why:
            print("FAIL  %s  %s  %s" % (selector(e), e["figure"], why))
            missing += 1
            continue
        new = strict(value / MARGIN if e["better"] == "higher" else value * MARGIN, e["better"])
        print(
            "set   %s  %s  measured %.4g  floor %.4g -> %.4g"
            % (selector(e), e["figure"], value, e["floor"], new)
        )
        e["floor"] = new
    if missing:
        return missing
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=os.path.dirname(os.path.abspath(path)),
        ).stdout.strip()
    except OSError:
        commit = ""
    doc["measured"] = {
        "commit": commit or "?",
        "date": datetime.date.today().isoformat(),
        "run": run_path,
    }
    with open(path, "w") as f:
        f.write(dumps(doc))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--update", action="store_true", help="rewrite the floors from the run instead")
    p.add_argument("floors_json")
    p.add_argument("run_jsonl")
    a = p.parse_args()
    try:
        doc = load_floors(a.floors_json)
    except Malformed as e:
        print("check_floors: %s: %s" % (a.floors_json, e), file=sys.stderr)
        return 2
    try:
        run = read_run(a.run_jsonl)
    except OSError as e:
        print(
            "check_floors: %s: cannot read the run: %s" % (a.run_jsonl, e.strerror), file=sys.stderr
        )
        return 2
    if a.update:
        missing = update(a.floors_json, doc, a.run_jsonl, run)
        if missing:
            print(
                "check_floors: %s unchanged: %d floor(s) not measured by %s"
                % (a.floors_json, missing, a.run_jsonl),
                file=sys.stderr,
            )
            return 1
        print("check_floors: %s rewritten from %s" % (a.floors_json, a.run_jsonl))
        return 0
    print("check_floors: %s against %s" % (a.run_jsonl, a.floors_json))
    failed = check(doc, run)
    if failed:
        print(
            "check_floors: %d of %d floors FAILED (a figure on the wrong side of its floor, or "
            "its line missing; bench/floors.json says how to update them)"
            % (failed, len(doc["floors"]))
        )
        return 1
    print("check_floors: all %d floors hold" % len(doc["floors"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
