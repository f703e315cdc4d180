"""XGBoost on scikit-learn's breast-cancer data (569 tumours, 30 features, bundled: no download),
tuned with ASHA: Ray Tune 2.x's XGBoost example (`ray.tune.integration.xgboost`'s
`TuneReportCheckpointCallback`), ported by changing only the imports.

    /usr/bin/python3 examples/xgboost/tune_xgboost.py [--quick] [--storage PATH]

Each boosting round is one Tune result (`eval-logloss`, `eval-error` on the held-out quarter)
with a checkpoint: the booster, `model.xgb` (XGBoost's binary format). A trial started from a
checkpoint (`train.get_checkpoint()`: a retry after a failure) loads that booster and boosts the
rounds still to do. At the end the best trial's checkpoint is fetched from the checkpoint-store
and its held-out log loss recomputed.

The embedded suite starts and stops with the script; `TUNEBUS_ADDRESS` sends it to a running
suite. Needs python3-xgboost and python3-sklearn, and the driver's modules (python3-zmq
python3-msgpack python3-cloudpickle). Results go to examples/xgboost/results/ unless --storage.
"""

import argparse
import os
import sys

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python")
)

import numpy as np  # noqa: E402
import xgboost as xgb  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.metrics import log_loss  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from tunebus import train, tune  # noqa: E402
from tunebus.tune.integration.xgboost import TuneReportCheckpointCallback  # noqa: E402
from tunebus.tune.schedulers import ASHAScheduler  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL_FILE = "model.xgb"
ROUNDS = 10  # boosting rounds per trial (XGBoost's default num_boost_round)


def load_data():
    """(train DMatrix, eval DMatrix, eval features, eval labels): a fixed stratified split
    (random_state=0) of the 569 samples into 426 and 143."""
    x, y = load_breast_cancer(return_X_y=True)
    x_train, x_eval, y_train, y_eval = train_test_split(
        x, y, test_size=0.25, random_state=0, stratify=y
    )
    return (xgb.DMatrix(x_train, label=y_train), xgb.DMatrix(x_eval, label=y_eval), x_eval, y_eval)


def train_breast_cancer(config):
    """One trial: `config` is XGBoost's parameters. Reports after every round until ROUNDS."""
    train_set, eval_set, _, _ = load_data()
    booster = None
    checkpoint = train.get_checkpoint()
    if checkpoint:
        booster = TuneReportCheckpointCallback.get_model(checkpoint, MODEL_FILE)
    done = booster.num_boosted_rounds() if booster is not None else 0
    xgb.train(
        config,
        train_set,
        num_boost_round=ROUNDS - done,
        evals=[(eval_set, "eval")],
        verbose_eval=False,
        xgb_model=booster,
        callbacks=[TuneReportCheckpointCallback(filename=MODEL_FILE)],
    )


def search_space():
    return {
        "objective": "binary:logistic",
        "eval_metric": ["logloss", "error"],
        "nthread": 1,  # one CPU per trial
        "max_depth": tune.randint(1, 9),
        "min_child_weight": tune.choice([1, 2, 3]),
        "subsample": tune.uniform(0.5, 1.0),
        "eta": tune.loguniform(1e-4, 1e-1),
    }


def run(quick, storage):
    """Runs the experiment; returns the ResultGrid."""
    tuner = tune.Tuner(
        tune.with_resources(train_breast_cancer, {"cpu": 1}),
        param_space=search_space(),
        tune_config=tune.TuneConfig(
            metric="eval-logloss",
            mode="min",
            num_samples=6 if quick else 16,
            scheduler=ASHAScheduler(max_t=ROUNDS, grace_period=1, reduction_factor=2),
        ),
        run_config=train.RunConfig(
            name="xgboost-asha",
            storage_path=storage,
            checkpoint_config=train.CheckpointConfig(num_to_keep=2),
        ),
    )
    return tuner.fit()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI size: 6 trials instead of 16")
    parser.add_argument("--storage", default=os.path.join(HERE, "results"))
    args = parser.parse_args()
    grid = run(args.quick, args.storage)
    best = grid.get_best_result()
    print(
        "best trial %s: eval-logloss %.4f, accuracy %.4f after %d rounds with %s "
        "(%d trials, %d errors)"
        % (
            best.metrics["trial_id"],
            best.metrics["eval-logloss"],
            1.0 - best.metrics["eval-error"],
            best.metrics["training_iteration"],
            {k: best.config[k] for k in ("max_depth", "min_child_weight", "subsample", "eta")},
            len(grid),
            grid.num_errors,
        )
    )
    booster = TuneReportCheckpointCallback.get_model(best.checkpoint, MODEL_FILE)
    _, _, x_eval, y_eval = load_data()
    predicted = booster.predict(xgb.DMatrix(x_eval))
    print(
        "best checkpoint: %d rounds, eval-logloss %.6f recomputed (%.6f reported), "
        "accuracy %.4f"
        % (
            booster.num_boosted_rounds(),
            log_loss(y_eval, predicted),
            best.metrics["eval-logloss"],
            float(np.mean((predicted > 0.5) == y_eval)),
        )
    )


if __name__ == "__main__":
    main()
