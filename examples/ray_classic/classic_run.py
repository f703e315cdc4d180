"""A Ray Tune script in its classic form (Ray 1.x / early 2.x): `tune.run` with a function
trainable that checkpoints through `tune.checkpoint_dir` and restores from its `checkpoint_dir`
argument, an ASHA scheduler, a `CLIReporter`, a driver callback and the `ExperimentAnalysis` it
returns. Under Ray the imports were `from ray import tune` and `from ray.tune...`, with a
`ray.init()` before `tune.run`; nothing else changed.

    /usr/bin/python3 examples/ray_classic/classic_run.py [--smoke-test]
"""

import argparse
import json
import os
import sys
import time

# The package from this source tree (an installed tunebus needs no such line).
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python")
)

from tunebus import tune  # noqa: E402
from tunebus.tune import CLIReporter  # noqa: E402
from tunebus.tune.schedulers import AsyncHyperBandScheduler  # noqa: E402


def evaluation_fn(step, width, height):
    time.sleep(0.05)
    return (0.1 + width * step / 100) ** (-1) + height * 0.1


def train_func(config, checkpoint_dir=None):
    start = 0
    if checkpoint_dir:
        with open(os.path.join(checkpoint_dir, "checkpoint")) as f:
            start = json.load(f)["step"] + 1
    for step in range(start, config["steps"]):
        loss = evaluation_fn(step, config["width"], config["height"])
        with tune.checkpoint_dir(step=step) as folder:
            with open(os.path.join(folder, "checkpoint"), "w") as f:
                json.dump({"step": step}, f)
        tune.report(iterations=step, mean_loss=loss)


class BestSoFar(tune.Callback):
    """Prints each new best mean_loss as results arrive (runs in the driver)."""

    def __init__(self):
        self.best = None

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if self.best is None or result["mean_loss"] < self.best:
            self.best = result["mean_loss"]
            print("New best mean_loss %.4f from %s" % (self.best, trial))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true", help="Finish quickly for testing")
    args, _ = parser.parse_known_args()

    analysis = tune.run(
        train_func,
        name="classic_run",
        metric="mean_loss",
        mode="min",
        scheduler=AsyncHyperBandScheduler(grace_period=2),
        stop={"training_iteration": 5 if args.smoke_test else 30},
        num_samples=4 if args.smoke_test else 16,
        config={"steps": 30, "width": tune.uniform(10, 100), "height": tune.uniform(-100, 100)},
        progress_reporter=CLIReporter(
            metric_columns=["mean_loss", "iterations"],
            parameter_columns=["width", "height"],
            max_report_frequency=2 if args.smoke_test else 10,
        ),
        callbacks=[BestSoFar()],
        verbose=1,
    )
    print("Best hyperparameters found were: ", analysis.best_config)
    print(
        "Best result: mean_loss %.4f in %s"
        % (analysis.best_result["mean_loss"], analysis.best_logdir)
    )
