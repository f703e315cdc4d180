"""The digits experiment (experiment.yaml, asha.yaml, tpe.yaml) written as a Ray Tune 2.x script:
scikit-learn's SGDClassifier on the 8x8 digits, tuned with ASHA, then with TPE.

    /usr/bin/python3 examples/digits/tune_digits.py            # both runs, ~1 min on 2 cores
    /usr/bin/python3 examples/digits/tune_digits.py --quick    # fewer trials and epochs

Ported from Ray by changing only the imports (`from ray import tune, train` → `from tunebus
import tune, train`); the embedded suite starts and stops with the script. It needs
python3-sklearn and the driver's modules (python3-zmq python3-msgpack python3-cloudpickle), and
finds tunectl in ../../build/bin (or TUNEBUS_TUNECTL). Results go to examples/digits/results/.
"""

import os
import pickle
import sys
import tempfile
import warnings

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python")
)

import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.linear_model import SGDClassifier  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from tunebus import train, tune  # noqa: E402
from tunebus.tune.schedulers import ASHAScheduler  # noqa: E402
from tunebus.tune.search import ConcurrencyLimiter, TPESearch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def load_data():
    """Fixed split (random_state=0) of the 1797 digit images, standardised on the training part."""
    x, y = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(
        x, y, test_size=0.25, random_state=0, stratify=y
    )
    scaler = StandardScaler().fit(x_train)
    return scaler.transform(x_train), scaler.transform(x_val), y_train, y_val


def train_digits(config):
    """One trial: an epoch of partial_fit per report, a checkpoint of the model each epoch."""
    warnings.filterwarnings("ignore")
    x_train, x_val, y_train, y_val = load_data()
    classes = np.unique(y_train)
    model, start = None, 0
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            with open(os.path.join(folder, "model.pkl"), "rb") as f:
                model, start = pickle.load(f)
    if model is None:
        model = SGDClassifier(
            loss=config["loss"],
            alpha=config["alpha"],
            learning_rate=config["learning_rate"],
            eta0=config["eta0"],
            random_state=0,
        )
    rng = np.random.RandomState(start)
    for epoch in range(start + 1, config["epochs"] + 1):
        order = rng.permutation(len(x_train))
        model.partial_fit(x_train[order], y_train[order], classes=classes)
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "model.pkl"), "wb") as f:
                pickle.dump((model, epoch), f)
            train.report(
                {
                    "val_accuracy": model.score(x_val, y_val),
                    "train_accuracy": model.score(x_train, y_train),
                    "epoch": epoch,
                },
                checkpoint=train.Checkpoint.from_directory(folder),
            )


def space(epochs):
    return {
        "alpha": tune.loguniform(1e-6, 1e-2),
        "eta0": tune.loguniform(1e-4, 1e-1),
        "loss": tune.choice(["hinge", "log_loss", "modified_huber"]),
        "learning_rate": tune.choice(["constant", "invscaling"]),
        "epochs": epochs,
    }


def main():
    quick = "--quick" in sys.argv
    epochs, samples = (9, 8) if quick else (27, 16)
    storage = os.path.join(HERE, "results")
    resources = tune.with_resources(train_digits, {"cpu": 1})

    asha = tune.Tuner(
        resources,
        param_space=space(epochs),
        tune_config=tune.TuneConfig(
            metric="val_accuracy",
            mode="max",
            num_samples=samples,
            scheduler=ASHAScheduler(max_t=epochs, grace_period=1, reduction_factor=3),
            max_concurrent_trials=4,
        ),
        run_config=tune.RunConfig(name="digits-asha-py", storage_path=storage),
    )
    best = asha.fit().get_best_result()
    print("ASHA best: val_accuracy %.4f with %s" % (best.metrics["val_accuracy"], best.config))

    tpe = tune.Tuner(
        resources,
        param_space=space(20 if not quick else 5),
        tune_config=tune.TuneConfig(
            metric="val_accuracy",
            mode="max",
            num_samples=24 if not quick else 10,
            search_alg=ConcurrencyLimiter(TPESearch(n_startup_trials=10, seed=42), 2),
        ),
        run_config=tune.RunConfig(name="digits-tpe-py", storage_path=storage),
    )
    grid = tpe.fit()
    best = grid.get_best_result()
    print(
        "TPE best: val_accuracy %.4f with %s (%d trials, %d errors)"
        % (best.metrics["val_accuracy"], best.config, len(grid), grid.num_errors)
    )
    df = grid.get_dataframe()
    print(
        df[["trial_id", "val_accuracy", "config/alpha", "config/loss"]]
        .sort_values("val_accuracy", ascending=False)
        .head(5)
        .to_string(index=False)
    )


if __name__ == "__main__":
    main()
