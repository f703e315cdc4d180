#!/usr/bin/env python3
"""Cross-check of our ASHA and median stopping rule against Optuna's SuccessiveHalvingPruner and
MedianPruner (docs/explanation/schedulers-optuna-crosscheck.md explains the mapping and every
known difference).

For each setting and seed it builds deterministic curves and a report order (curves.py), feeds
them to our scheduler through build/bin/scheduler_crosscheck (the real TrialRunner) and to an
Optuna study (study.ask(), trial.report(value, step), trial.should_prune()) in the same order,
and compares the decisions one by one, two ways:
  lockstep     a trial that either side stops reports nothing more to both (ours hears
               stop_trial, Optuna gets tell(PRUNED)), so every decision is made on the same
               history: the agreement measures the rules, not the knock-on effects.
  independent  each side runs alone; a trial's outcome is the step where it stopped (or its
               last step): the agreement is the fraction of trials with the same outcome.
Prints one JSON summary. Exit status: 0; 1 when a "coincide" setting is below 100% agreement;
77 (ctest SKIP) when no Python interpreter here can import optuna.

Usage: optuna_crosscheck.py --bin build/bin/scheduler_crosscheck [--seeds 5] [--out FILE]
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys

SKIP = 77


def ensure_optuna():
    """Returns the optuna module, re-running this script under a Python that has it (Debian's
    /usr/bin/python3 with python3-optuna; a pyenv python3 may not), or exits SKIP saying why."""
    try:
        import optuna  # noqa: F401

        return optuna
    except ImportError:
        pass
    tried = [sys.executable]
    if not os.environ.get("TUNEBUS_CROSSCHECK_REEXEC"):
        for cand in [
            os.environ.get("TUNEBUS_OPTUNA_PYTHON"),
            "/usr/bin/python3",
            shutil.which("python3"),
        ]:
            if not cand or cand in tried or not os.path.exists(cand):
                continue
            tried.append(cand)
            if subprocess.run([cand, "-c", "import optuna"], capture_output=True).returncode == 0:
                env = dict(os.environ, TUNEBUS_CROSSCHECK_REEXEC="1")
                os.execve(cand, [cand] + sys.argv, env)
    print(
        "SKIPPED: no Python interpreter can import optuna (tried %s); install python3-optuna "
        "(scripts/test installs it) or set TUNEBUS_OPTUNA_PYTHON" % ", ".join(tried),
        flush=True,
    )
    sys.exit(SKIP)


optuna = ensure_optuna()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import curves as cv  # noqa: E402

N_TRIALS, STEPS = 12, 20


class Ours:
    """Our scheduler behind scheduler_crosscheck, one JSON line per event."""

    def __init__(self, binary, scheduler, config, mode, n):
        self.proc = subprocess.Popen(
            [binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self._send(
            {"scheduler": scheduler, "config": config, "mode": mode, "num_trials": n}, answer=False
        )

    def _send(self, obj, answer=True):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()
        if answer:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("scheduler_crosscheck exited (status %s)" % self.proc.wait())
            return json.loads(line)

    def report(self, i, step, value):
        d = self._send({"trial": i, "step": step, "value": value})["decision"]
        if d not in ("continue", "stop"):
            raise RuntimeError("unexpected decision %r for trial %d step %d" % (d, i, step))
        return d == "stop"

    def end(self, i, how, value=None):
        """how: "complete" (the trainable returned) or "stop" (stop_trial); `value` is unused."""
        self._send({"trial": i, "end": how})

    def close(self):
        self.proc.stdin.close()
        if self.proc.wait() != 0:
            raise RuntimeError("scheduler_crosscheck failed")


class Theirs:
    """An Optuna study with every trial asked up front (all RUNNING, like ours)."""

    def __init__(self, pruner, mode, n):
        direction = "maximize" if mode == "max" else "minimize"
        self.study = optuna.create_study(direction=direction, pruner=pruner)
        self.trials = [self.study.ask() for _ in range(n)]

    def report(self, i, step, value):
        self.trials[i].report(value, step)
        return bool(self.trials[i].should_prune())  # MedianPruner answers a numpy bool

    def end(self, i, how, value=None):
        """how: "stop" (tell PRUNED: an early-stopped trial) or "complete" (tell `value`)."""
        if how == "stop":
            self.study.tell(self.trials[i], state=optuna.trial.TrialState.PRUNED)
        else:
            self.study.tell(self.trials[i], value)

    def close(self):
        pass


def drive(sides, curves, order, lockstep):
    """Feeds `order` (trial indices, curves.py) to `sides` (name -> Ours | Theirs). Returns the
    decisions made by both sides on the same report ([{name: stopped?}], in order) and each
    trial's outcome per side ({name: [step it ended at, per trial]})."""
    nxt = [0] * len(curves)
    ended = {name: set() for name in sides}
    decisions, outcome = [], {name: [None] * len(curves) for name in sides}
    for i in order:
        t = nxt[i] = nxt[i] + 1
        value = curves[i][t - 1]
        row = {}
        for name, side in sides.items():
            if i in ended[name]:
                continue
            row[name] = side.report(i, t, value)
            if row[name] or t == len(curves[i]):
                outcome[name][i] = t
                ended[name].add(i)
                if not row[name]:
                    side.end(i, "complete", value)  # the curve ended: the trainable returned
                elif isinstance(side, Theirs):
                    side.end(i, "stop")  # ours is TERMINATED by its own STOP already
        if lockstep and any(row.values()):
            for name, side in sides.items():  # the other side stops it too
                if i not in ended[name]:
                    side.end(i, "stop")
                    ended[name].add(i)
                    outcome[name][i] = t
        if len(row) == len(sides):
            decisions.append(row)
    for side in sides.values():
        side.close()
    return decisions, outcome


# ---- settings: (name, our scheduler, our config, mappable, Optuna pruner factory) -------------


def asha(rf, min_resource=1, mesr=0, bootstrap=0):
    ours = {
        "time_attr": "training_iteration",
        "grace_period": min_resource * rf**mesr,
        "reduction_factor": rf,
        "max_t": 1000,
        "brackets": 1,
    }
    name = (
        "SHA(min_resource=%d, rf=%d, mesr=%d, bootstrap=%d) ~ "
        "ASHA(grace_period=%d, reduction_factor=%d)"
    ) % (min_resource, rf, mesr, bootstrap, ours["grace_period"], rf)
    # bootstrap_count > 0 has no Ray Tune counterpart: never a "coincide" setting.
    return (
        name,
        "asha",
        ours,
        bootstrap == 0,
        lambda: optuna.pruners.SuccessiveHalvingPruner(
            min_resource=min_resource,
            reduction_factor=rf,
            min_early_stopping_rate=mesr,
            bootstrap_count=bootstrap,
        ),
    )


def median(grace, min_samples):
    ours = {
        "time_attr": "training_iteration",
        "grace_period": grace,
        "min_samples_required": min_samples,
        "min_time_slice": 0,
        "hard_stop": True,
    }
    name = (
        "MedianPruner(n_startup_trials=%d, n_warmup_steps=%d, n_min_trials=%d) ~ "
        "MedianStoppingRule(grace_period=%d, min_samples_required=%d)"
    ) % (min_samples, grace + 1, min_samples, grace, min_samples)
    return (
        name,
        "median_stopping",
        ours,
        True,
        lambda: optuna.pruners.MedianPruner(
            n_startup_trials=min_samples,
            n_warmup_steps=grace + 1,
            interval_steps=1,
            n_min_trials=min_samples,
        ),
    )


def scenarios(seed, algo, ours_config):
    """[(family, curves label, order label, curves, order)] for one seed and setting. "coincide":
    constructed so that the two rules must agree on every decision; "differ": realistic noisy
    curves, agreement reported only. The docs explain both constructions."""
    rng = random.Random(seed)
    n, s = N_TRIALS, STEPS
    noisy = cv.saturating(random.Random(seed), n, s)
    asynchronous = cv.asynchronous(random.Random(seed), n, s)
    if algo == "asha":
        grace, rf = ours_config["grace_period"], ours_config["reduction_factor"]
        milestones = [grace * rf**k for k in range(s) if grace * rf**k <= s]
        extremal = cv.rung_extremal(rng, n, s, milestones)
        return [
            ("coincide", "extremal at every rung", "round robin", extremal, cv.round_robin(n, s)),
            ("coincide", "extremal at every rung", "staggered", extremal, cv.staggered(n, s)),
            ("differ", "noisy saturating", "asynchronous", noisy, asynchronous),
        ]
    grace = ours_config["grace_period"]
    converged = cv.converged_by(rng, cv.extremal_levels(rng, n), s, grace)
    return [
        (
            "coincide",
            "converged by grace_period, extremal",
            "sequential",
            converged,
            cv.sequential(n, s),
        ),
        ("differ", "noisy saturating", "sequential", noisy, cv.sequential(n, s)),
        ("differ", "noisy saturating", "asynchronous", noisy, asynchronous),
    ]


SETTINGS = [
    asha(2),
    asha(3),
    asha(4),
    asha(2, min_resource=2),
    asha(3, mesr=1),
    asha(2, bootstrap=2),
    median(0, 1),
    median(1, 3),
    median(3, 3),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="path of scheduler_crosscheck")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", help="also write the summary here")
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    rows = {}
    for name, algo, ours_config, mappable, pruner in SETTINGS:
        for seed in range(args.seeds):
            for mode in ("max", "min"):
                for family, curve_label, order_label, curves, order in scenarios(
                    seed, algo, ours_config
                ):
                    family = family if mappable else "differ"
                    data = cv.as_minimised(curves) if mode == "min" else curves
                    key = (name, family, curve_label, order_label)
                    r = rows.setdefault(
                        key,
                        {
                            "decisions": 0,
                            "agree": 0,
                            "ours_only_stop": 0,
                            "optuna_only_prune": 0,
                            "ours_stops": 0,
                            "optuna_prunes": 0,
                            "trials": 0,
                            "same_outcome": 0,
                        },
                    )
                    for lockstep in (True, False):
                        sides = {
                            "ours": Ours(args.bin, algo, ours_config, mode, N_TRIALS),
                            "optuna": Theirs(pruner(), mode, N_TRIALS),
                        }
                        decisions, outcome = drive(sides, data, order, lockstep)
                        if lockstep:
                            r["decisions"] += len(decisions)
                            r["agree"] += sum(d["ours"] == d["optuna"] for d in decisions)
                            r["ours_only_stop"] += sum(
                                d["ours"] and not d["optuna"] for d in decisions
                            )
                            r["optuna_only_prune"] += sum(
                                d["optuna"] and not d["ours"] for d in decisions
                            )
                            r["ours_stops"] += sum(d["ours"] for d in decisions)
                            r["optuna_prunes"] += sum(d["optuna"] for d in decisions)
                        else:
                            r["trials"] += N_TRIALS
                            r["same_outcome"] += sum(
                                a == b for a, b in zip(outcome["ours"], outcome["optuna"])
                            )

    results, ok = [], True
    for (name, family, curve_label, order_label), r in rows.items():
        agreement = r["agree"] / r["decisions"]
        outcome = r["same_outcome"] / r["trials"]
        required = 1.0 if family == "coincide" else None
        passed = required is None or (agreement >= required and outcome >= required)
        ok = ok and passed
        results.append(
            {
                "setting": name,
                "family": family,
                "curves": curve_label,
                "order": order_label,
                "decisions": r["decisions"],
                "ours_stops": r["ours_stops"],
                "optuna_prunes": r["optuna_prunes"],
                "agreement": round(agreement, 4),
                "ours_only_stop": r["ours_only_stop"],
                "optuna_only_prune": r["optuna_only_prune"],
                "trial_outcome_agreement": round(outcome, 4),
                "required": required,
                "passed": passed,
            }
        )
    summary = {
        "optuna_version": optuna.__version__,
        "seeds": args.seeds,
        "trials": N_TRIALS,
        "steps": STEPS,
        "modes": ["max", "min"],
        "ok": ok,
        "results": results,
    }
    text = json.dumps(summary, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
