"""The build benchmark: what the README's first command's build cost (scripts/setup writes
build/build-report-setup.json through scripts/build-report) over a baseline measured in this run,
the CPU time of compiling bench/build_reference.cpp (third-party code only) with the same compiler
and flags (those of a unit of build/compile_commands.json).

Prints one JSON line: {"benchmark": "build", "fresh": bool, "wall_s", "steps", "units_s" (the sum
of the build's step times, seconds), "reference_s" (median CPU seconds of 3 compiles),
"ratio_to_baseline" (units_s / reference_s), "top" (the 5 costliest steps), "machine"}. A build
that did not start from an empty folder (an incremental one) is "fresh": false, and
bench/floors.json judges only a fresh one (.ci/run builds a fresh clone); prints nothing when there
is no report. Standard library only.

Usage: python3 bench/build_cost.py [BUILD_DIR]   (./build)
"""
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import machine  # noqa: E402

REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build_reference.cpp")


def compile_command(build_dir):
    """The compiler and flags of a tunebus unit from compile_commands.json, as an argv without
    its source and output."""
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        commands = json.load(f)
    for c in commands:
        if "tunebus_core.dir" in c["file"] or "libs/core/" in c["file"]:
            argv = shlex.split(c["command"])
            break
    else:
        argv = shlex.split(commands[0]["command"])
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("-o", "-c", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-MD", "-MMD") or a.endswith((".cpp", ".cxx", ".cc")):
            continue
        kept.append(a)
    return [a for a in kept if "ccache" not in os.path.basename(a)]


def cpu_seconds_of(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    build_dir = sys.argv[1] if len(sys.argv) > 1 else "build"
    report_path = os.path.join(build_dir, "build-report-setup.json")
    if not os.path.exists(report_path):
        return 0
    with open(report_path) as f:
        report = json.load(f)
    argv = compile_command(build_dir)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "reference.o")
        times = sorted(cpu_seconds_of(argv + ["-c", REFERENCE, "-o", out]) for _ in range(3))
    reference_s = times[1]
    print(
        json.dumps(
            {
                "benchmark": "build",
                "fresh": bool(report.get("fresh")),
                "wall_s": report["wall_s"],
                "steps": report["steps"],
                "units_s": report["units_s"],
                "reference_s": round(reference_s, 2),
                "runs_reference_s": [round(t, 2) for t in times],
                "ratio_to_baseline": round(report["units_s"] / reference_s, 2),
                "top": report["top"],
                "machine": machine(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
