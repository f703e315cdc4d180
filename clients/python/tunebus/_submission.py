"""Submitting a Tuner's experiment file and following it to its end, over the control socket.

The steps and messages of `tunectl run FILE` (services/tunectl/run_command.cpp), made by the
driver itself through tunebus._control.ControlClient:

1. `resume` (a restored Tuner): resume_experiment_command continues the unfinished experiment of
   that name; "... is finished" (or none of that name) submits a new run.
2. The file's folder is packed (tunebus._workdir) and uploaded unless the store holds it, then
   submit_experiment. The run is followed by its journal name `<name>-<experiment_id>` (names
   are unique only among unfinished experiments), or by name when resumed.
3. get_experiment every 0.2 s until `finished`; with verbose >= 1 a summary line every
   `refresh_s` seconds (10 s), then the closing lines (status and reason, the best trial, the
   results folder, the errored trials with their error.txt). A scheduler that stops answering is
   waited for 60 s (a restarted one resumes the experiment from its journal); an embedded suite
   that exited is not: its exit code and log's last lines end the run at once.
4. Ctrl-C (KeyboardInterrupt) sends stop_experiment with interrupt: running trials stop and
   wait to be resumed from their newest checkpoint, and the run follows on to INTERRUPTED; a
   second Ctrl-C stops following at once (the experiment stays resumable).

Messages go to stderr, the summary and closing lines to stdout, as tunectl's.
"""

import json
import math
import os
import sys
import time

from tunebus import _suite, _workdir
from tunebus._errors import TuneError

POLL_S = 0.2
REFRESH_S = 10.0
SCHEDULER_RETURN_S = 60.0  # how long a run waits for a scheduler that stopped answering


def _say(verbose, text):
    if verbose:
        print(text, file=sys.stderr, flush=True)


def _resume(client, name, verbose):
    """True when the scheduler continues experiment `name`; False when a new run is due."""
    try:
        resumed = client.resume(name)
    except TuneError as e:
        if e.code == "unavailable":
            raise
        if e.code == "failed_precondition" and " is finished" in e.message:
            _say(verbose, "Experiment %s ended before; starting a new run" % name)
        return False
    _say(
        verbose,
        "Resuming experiment %s: %s trials so far (a new Tuner starts a new run)"
        % (name, resumed.get("total")),
    )
    return True


def submit(client, path, exp, resume, verbose):
    """Submits the experiment file `path` (the map `exp` written there), or continues the run of
    that name when `resume`; returns the name to follow it by. Errors: TuneError, the
    scheduler's code and message (invalid_argument for what the file cannot hold,
    failed_precondition, unavailable), or invalid_argument when its folder cannot be shipped."""
    name = exp["name"]
    base_dir = os.path.dirname(os.path.abspath(path))
    try:
        archive = _workdir.pack(base_dir, exp["results_dir"])
    except TuneError as e:
        raise TuneError(e.code, "%s: working_dir: %s" % (path, e.message)) from None
    if resume and _resume(client, name, verbose):
        return name
    uploaded = client.upload_working_dir(archive)
    _say(
        verbose,
        "Shipping working_dir %s: %d files, %s (%s archive, sha256 %s)%s"
        % (
            base_dir,
            archive.files,
            _workdir._human(archive.content_bytes),
            _workdir._human(len(archive.data)),
            archive.digest[:12],
            "" if uploaded else ", already in the checkpoint-store",
        ),
    )
    with open(path) as f:
        spec_yaml = f.read()
    submitted = client.submit(spec_yaml, base_dir, path, archive)
    results_dir = submitted.get("results_dir") or ""
    if results_dir and os.path.basename(results_dir.rstrip("/")) != name:
        _say(
            verbose,
            "%s/%s holds an earlier run; this run writes to %s"
            % (os.path.dirname(results_dir.rstrip("/")), name, results_dir),
        )
    if submitted.get("experiment_id"):
        return "%s-%s" % (name, submitted["experiment_id"])
    return name


def format_value(value):
    """A metric as tunectl's table shows it: floats with 4 significant digits."""
    if isinstance(value, float):
        return "%.4g" % value if math.isfinite(value) else str(value)
    return str(value)


def summary_line(e):
    """ "<name>: <total> trials | <n STATUS, ...> | <elapsed> s | best <metric>=<v> (<trial>)"."""
    counts = ", ".join(
        "%d %s" % (n, status)
        for status, n in sorted((e.get("counts") or {}).items())
        if isinstance(n, int) and n
    )
    total = e.get("total", -1)
    line = "%s: %s trials | %s | %.1f s" % (
        e.get("name", "?"),
        "unbounded" if total is None or total < 0 else total,
        counts,
        float(e.get("elapsed_s") or 0),
    )
    metric = e.get("metric") or ""
    best = e.get("best") or {}
    value = (best.get("last_result") or {}).get(metric) if metric else None
    if value is not None:
        line += " | best %s=%s (%s)" % (metric, format_value(value), best.get("trial_id"))
    front = e.get("pareto_front")
    if isinstance(front, list):
        line += " | Pareto front %d %s" % (len(front), "trial" if len(front) == 1 else "trials")
    return line


def pareto_lines(e):
    """The Pareto front of a multi-objective experiment as `tunectl run` ends with it: a title
    naming the objectives, then one line per trial (id, each objective's value, config)."""
    objectives = e.get("objectives") or []
    front = e.get("pareto_front") or []
    described = ", ".join("%s %s" % (o.get("metric"), o.get("mode")) for o in objectives)
    lines = [
        "Pareto front (%s): %d %s"
        % (described, len(front), "trial" if len(front) == 1 else "trials")
    ]
    for t in front:
        result = t.get("last_result") or {}
        values = "  ".join(
            "%s=%s" % (o.get("metric"), format_value(result.get(o.get("metric"))))
            for o in objectives
        )
        lines.append("  %s  %s  %s" % (t.get("trial_id"), values, _compact(t.get("config"))))
    return lines


def print_final(client, e, followed):
    """The closing lines: status and reason, the best trial, the results folder, and each
    errored trial with the first line of its error and its error.txt."""
    print(summary_line(e))
    print("\nExperiment %s %s: %s" % (e.get("name", ""), e.get("status", ""), e.get("reason", "")))
    best = e.get("best")
    if isinstance(best, dict):
        metric = e.get("metric", "")
        print("Best trial: %s" % best.get("trial_id", ""))
        print(
            "  %s = %s (mode %s)"
            % (metric, format_value((best.get("last_result") or {}).get(metric)), e.get("mode"))
        )
        print("  config: %s" % _compact(best.get("config")))
        print("  results: %s" % best.get("dir", ""))
    if isinstance(e.get("pareto_front"), list):
        for line in pareto_lines(e):
            print(line)
    print("Results directory: %s" % e.get("results_dir", ""))
    try:
        errored = client.list_trials(followed, status="ERROR")
    except TuneError:
        errored = []
    if errored:
        print("Errored trials (%d):" % len(errored))
        for t in errored:
            print("  %s: %s" % (t.get("trial_id", ""), (t.get("error") or "").split("\n")[0]))
            print("    %s/error.txt" % t.get("dir", ""))
    sys.stdout.flush()


def _compact(value):
    return json.dumps(value, separators=(",", ":"))


def follow(client, followed, verbose, refresh_s=REFRESH_S):
    """Follows the experiment `followed` to its end (see the module doc). Returns its final
    summary (`status` FINISHED, INTERRUPTED, ...), or None when a second Ctrl-C stopped
    following. Errors: TuneError unavailable after 60 s without an answer (at once when the
    embedded suite exited), or the scheduler's."""
    interrupted = False
    lost_since = None
    last_print = -math.inf
    while True:
        try:
            try:
                e = client.get_experiment(followed)
            except TuneError as err:
                if err.code != "unavailable" or _suite.exit_note(client.endpoint):
                    raise  # an embedded suite that exited does not come back
                now = time.monotonic()
                if lost_since is None:
                    lost_since = now
                    _say(
                        verbose,
                        "tunebus: lost the scheduler: %s; waiting up to %.0f s for it"
                        % (err.message, SCHEDULER_RETURN_S),
                    )
                if now - lost_since < SCHEDULER_RETURN_S:
                    time.sleep(POLL_S)
                    continue
                raise
            if lost_since is not None:
                _say(verbose, "tunebus: the scheduler answers again; following %s" % followed)
                lost_since = None
            if e.get("finished"):
                if verbose:
                    print_final(client, e, followed)
                return e
            now = time.monotonic()
            if verbose and now - last_print >= refresh_s:
                last_print = now
                print(summary_line(e), flush=True)
            time.sleep(POLL_S)
        except KeyboardInterrupt:
            if interrupted:
                return None
            interrupted = True
            print(
                "\ntunebus: interrupting the experiment: running trials stop and wait to be "
                "resumed from their newest checkpoint (Ctrl-C again to exit at once)",
                file=sys.stderr,
                flush=True,
            )
            try:
                client.stop_experiment(followed, interrupt=True)
            except TuneError as err:
                print(
                    "tunebus: the scheduler cannot interrupt now: %s" % err.message,
                    file=sys.stderr,
                )


__all__ = ["submit", "follow", "summary_line"]
