"""Digits: a real tunebus trainable (scikit-learn SGDClassifier on the bundled digits data).

Each epoch is one shuffled pass of partial_fit over the training split; after every epoch it
reports val_accuracy and train_accuracy through clients/python/tunebus/ and obeys the
decision (a "checkpoint" decision pickles the model into the checkpoint dir; a restored
attempt continues from TUNEBUS_RESTORE_DIR).

Config keys (all optional):
    alpha          L2 regularisation strength (default 1e-4)
    eta0           initial learning rate (default 0.01)
    loss           "hinge" | "log_loss" | "modified_huber" | ... (default "hinge")
    learning_rate  "constant" | "invscaling" | "optimal" | "adaptive" (default "constant"), or
                   a map {schedule: <one of those>, eta0, power_t} (a conditional branch,
                   conditional.yaml), whose keys stand for the top-level ones
    power_t        invscaling's exponent (default 0.5)
    epochs         passes over the data (default 20)
    seed           shuffling / init seed (default 0)

Runs standalone too:  TUNEBUS_CONFIG='{"alpha": 1e-4, "eta0": 0.01}' python3 train.py
"""

import os
import pickle
import warnings

# tunebus/ beside this file links to clients/python/tunebus/: the link's target ships with the
# working_dir (this folder), so the import works in a worker's copy of it too.

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.linear_model import SGDClassifier  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import tunebus  # noqa: E402

CHECKPOINT_FILE = "model.pkl"


def sklearn_loss_name(loss):
    """scikit-learn < 1.1 calls the logistic loss "log"."""
    major_minor = tuple(int(p) for p in sklearn.__version__.split(".")[:2] if p.isdigit())
    if loss == "log_loss" and major_minor < (1, 1):
        return "log"
    return loss


def load_data():
    """Fixed split (random_state=0) of the 1797 8x8 digit images, standardised on the training
    part."""
    x, y = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(
        x, y, test_size=0.25, random_state=0, stratify=y
    )
    scaler = StandardScaler().fit(x_train)
    return scaler.transform(x_train), scaler.transform(x_val), y_train, y_val


def main():
    warnings.filterwarnings("ignore")
    cfg = tunebus.config()
    schedule = cfg.get("learning_rate")
    if isinstance(schedule, dict):  # a conditional branch: its keys stand for the top-level ones
        cfg = dict(cfg, **{k: v for k, v in schedule.items() if k != "schedule"})
        cfg["learning_rate"] = schedule["schedule"]
    epochs = int(cfg.get("epochs", 20))
    seed = int(cfg.get("seed", 0))
    x_train, x_val, y_train, y_val = load_data()
    classes = np.unique(y_train)

    model = None
    start = 0
    restore = tunebus.restore_dir()
    if restore and os.path.exists(os.path.join(restore, CHECKPOINT_FILE)):
        with open(os.path.join(restore, CHECKPOINT_FILE), "rb") as f:
            state = pickle.load(f)
        model, start = state["model"], state["epoch"]
        # A PBT exploit restores another trial's model under a new config: train on with the
        # new hyperparameters (the loss stays the model's).
        model.set_params(
            alpha=float(cfg.get("alpha", model.alpha)),
            eta0=float(cfg.get("eta0", model.eta0)),
            learning_rate=cfg.get("learning_rate", model.learning_rate),
        )
        print("restored from %s at epoch %d" % (restore, start), flush=True)
    if model is None:
        model = SGDClassifier(
            loss=sklearn_loss_name(cfg.get("loss", "hinge")),
            alpha=float(cfg.get("alpha", 1e-4)),
            learning_rate=cfg.get("learning_rate", "constant"),
            eta0=float(cfg.get("eta0", 0.01)),
            power_t=float(cfg.get("power_t", 0.5)),
            random_state=seed,
        )
        start = tunebus.start_iteration()

    rng = np.random.RandomState(seed + start)
    for epoch in range(start + 1, epochs + 1):
        order = rng.permutation(len(x_train))
        model.partial_fit(x_train[order], y_train[order], classes=classes)
        train_acc = float(model.score(x_train, y_train))
        val_acc = float(model.score(x_val, y_val))
        decision = tunebus.report(
            val_accuracy=val_acc, train_accuracy=train_acc, epoch=epoch, done=epoch == epochs
        )
        if decision == "checkpoint":
            with open(os.path.join(tunebus.checkpoint_dir(), CHECKPOINT_FILE), "wb") as f:
                pickle.dump({"model": model, "epoch": epoch}, f)


if __name__ == "__main__":
    main()
