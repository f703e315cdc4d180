"""A Ray Tune script with Ray's Optuna integration in its classic form: `tune.run` with
`OptunaSearch` wrapped in a `ConcurrencyLimiter`, an ASHA scheduler, and a `CLIReporter`. Under
Ray the imports were `from ray import tune`, `from ray.tune.search.optuna import OptunaSearch`,
`from ray.tune.search import ConcurrencyLimiter`; nothing else changed. Optuna runs in the driver
(Debian's python3-optuna) and is asked over the external searcher protocol (PROTOCOL.md §7a).

    /usr/bin/python3 examples/ray_classic/optuna_run.py [--smoke-test]
"""

import argparse
import os
import sys
import time

# The package from this source tree (an installed tunebus needs no such line).
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python")
)

from tunebus import tune  # noqa: E402
from tunebus.tune.schedulers import AsyncHyperBandScheduler  # noqa: E402
from tunebus.tune.search import ConcurrencyLimiter  # noqa: E402
from tunebus.tune.search.optuna import OptunaSearch  # noqa: E402


def evaluation_fn(step, width, height, activation):
    time.sleep(0.01)
    scale = 1.0 if activation == "relu" else 1.2
    return scale * (0.1 + width * step / 100) ** (-1) + height * 0.1


def easy_objective(config):
    for step in range(config["steps"]):
        loss = evaluation_fn(step, config["width"], config["height"], config["activation"])
        tune.report(iterations=step, mean_loss=loss)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true", help="Finish quickly for testing")
    args, _ = parser.parse_known_args()

    searcher = ConcurrencyLimiter(OptunaSearch(seed=7), max_concurrent=4)
    analysis = tune.run(
        easy_objective,
        name="optuna_run",
        metric="mean_loss",
        mode="min",
        search_alg=searcher,
        scheduler=AsyncHyperBandScheduler(grace_period=3),
        num_samples=8 if args.smoke_test else 100,
        config={
            "steps": 20,
            "width": tune.uniform(0, 20),
            "height": tune.uniform(-100, 100),
            "activation": tune.choice(["relu", "tanh"]),
        },
        progress_reporter=tune.CLIReporter(max_report_frequency=30),
        verbose=1,
    )
    print("Best hyperparameters found were: ", analysis.best_config)
