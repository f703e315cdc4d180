"""Optuna's half of the peer side-by-side: JournalStorage with the file backend shared
by `--processes` processes, each running study.optimize on a trivial objective that reports 10
intermediate values and asks a pruner (SuccessiveHalvingPruner, Optuna's ASHA) after each.
Prints one JSON object: {"benchmark": "peer_optuna", "trials", "processes", "seconds",
"trials_per_s", "optuna_version", "machine"}. Run with Debian's /usr/bin/python3 (python3-optuna).
"""
import argparse
import json
import multiprocessing
import os
import resource
import sys
import tempfile
import time

import optuna

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import machine  # noqa: E402


def storage(path):
    try:
        backend = optuna.storages.journal.JournalFileBackend(path)
    except AttributeError:  # Optuna < 4
        backend = optuna.storages.JournalFileStorage(path)
    return optuna.storages.JournalStorage(backend)


def objective(trial):
    x = trial.suggest_float("x", -10, 10)
    value = 0.0
    for step in range(10):
        value = (x - 2) ** 2 + 1.0 / (step + 1)
        trial.report(value, step)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return value


def work(path, n, restarts):
    """Runs `n` trials. Optuna 3.1's file journal reads without the lock, so a reader can meet a
    half-written line and study.optimize dies (JSONDecodeError); the process then loads the
    study again and goes on with the trials it still owes (counted in `restarts`)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    finished = [0]

    def count(study, trial):
        finished[0] += 1

    while finished[0] < n:
        study = optuna.load_study(
            study_name="peer",
            storage=storage(path),
            pruner=optuna.pruners.SuccessiveHalvingPruner(),
        )
        try:
            study.optimize(objective, n_trials=n - finished[0], callbacks=[count])
        except Exception:  # noqa: BLE001 - the torn read above, from inside Optuna
            with restarts.get_lock():
                restarts.value += 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--processes", type=int, default=2)
    a = p.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "journal.log")
        optuna.create_study(study_name="peer", storage=storage(path), direction="minimize")
        restarts = multiprocessing.Value("i", 0)
        t0 = time.time()
        procs = [
            multiprocessing.Process(target=work, args=(path, a.trials // a.processes, restarts))
            for _ in range(a.processes)
        ]
        for pr in procs:
            pr.start()
        for pr in procs:
            pr.join()
        seconds = time.time() - t0
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        trials = optuna.load_study(study_name="peer", storage=storage(path)).trials
        done = len(trials)
        # A torn read can also FAIL the trial it happened in: counted, not hidden.
        failed = sum(1 for t in trials if t.state == optuna.trial.TrialState.FAIL)
    print(
        json.dumps(
            {
                "benchmark": "peer_optuna",
                "trials": done,
                "processes": a.processes,
                "storage": "JournalStorage + file backend",
                "pruner": "SuccessiveHalvingPruner",
                "failed_trials": failed,
                "restarts_after_torn_reads": restarts.value,
                "seconds": seconds,
                "cpu_cores_busy": (children.ru_utime + children.ru_stime) / seconds,
                "trials_per_s": done / seconds,
                "optuna_version": optuna.__version__,
                "machine": machine(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
