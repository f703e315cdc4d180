"""Draws bench/soak.py's samples (its JSONL) as one SVG: the suite's resident memory (MB) against
time, with the trials run on a second axis and the restarts (SIGKILL) and the first and last
experiment ends marked; below it, open file descriptors and threads.

Usage: /usr/bin/python3 bench/soak_plot.py SOAK.jsonl OUT.svg [--title TEXT]
Needs Debian's python3-matplotlib (scripts/install-deps bench).
"""

import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("jsonl")
    p.add_argument("out")
    p.add_argument("--title", default="tunebus soak: one embedded suite (tunectl up)")
    a = p.parse_args()
    with open(a.jsonl) as f:
        samples = [json.loads(line) for line in f if line.strip()]
    if not samples:
        raise SystemExit("soak_plot: no samples in %s" % a.jsonl)
    t = [s["t_s"] / 60 for s in samples]
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(9, 6), sharex=True, gridspec_kw={"height_ratios": [2, 1]}
    )
    top.plot(t, [s["rss_bytes"] / 2**20 for s in samples], color="tab:blue", label="RSS (MB)")
    top.set_ylabel("resident memory (MB)")
    top.set_ylim(bottom=0)
    trials = top.twinx()
    trials.plot(
        t, [s["trials_done"] for s in samples], color="tab:gray", linestyle="--", label="trials run"
    )
    trials.set_ylabel("trials run")
    trials.set_ylim(bottom=0)
    starts = {}
    for s in samples:
        starts.setdefault(s["suite_start"], s["t_s"] / 60)
    for n, at in sorted(starts.items())[1:]:
        top.axvline(at, color="tab:red", linewidth=0.8)
        top.annotate(
            "SIGKILL + restart",
            (at, 0),
            xytext=(3, 5),
            textcoords="offset points",
            color="tab:red",
            fontsize=8,
        )
    for s in samples:
        if s.get("event") in ("first_end", "last_end_settled"):
            top.plot([s["t_s"] / 60], [s["rss_bytes"] / 2**20], "o", color="tab:orange")
            top.annotate(
                s["event"].replace("_", " "),
                (s["t_s"] / 60, s["rss_bytes"] / 2**20),
                xytext=(4, 6),
                textcoords="offset points",
                fontsize=8,
            )
    top.set_title(a.title, fontsize=10)
    lines = top.get_legend_handles_labels()
    more = trials.get_legend_handles_labels()
    top.legend(lines[0] + more[0], lines[1] + more[1], loc="upper left", fontsize=8)
    bottom.plot(t, [s["fds"] for s in samples], label="open fds")
    bottom.plot(t, [s["threads"] for s in samples], label="threads")
    bottom.set_ylabel("count")
    bottom.set_xlabel("minutes")
    bottom.set_ylim(bottom=0)
    bottom.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out)


if __name__ == "__main__":
    main()
