"""The digits objective of the search quality benchmark (docs/reference/search.md, "Search quality
benchmark"): examples/digits' model, scikit-learn's SGDClassifier on the bundled 8x8 digits
(load_digits, 1,797 images), the same fixed split (25% validation, random_state 0, stratified)
and standardisation as examples/digits/train.py, trained for EPOCHS passes (fit with
max_iter=EPOCHS, tol=None, random_state=0) and scored by validation accuracy (val_accuracy, to
maximise). Deterministic in the config: the same config gives the same value.

Config keys (docs/reference/search.md's digits param space): alpha (L2 strength), eta0 (initial
learning
rate), loss (hinge | log_loss | modified_huber), learning_rate (constant | invscaling).

Both sides of the benchmark use this one function: bench/search_optuna.py imports it, and
bench/search_quality.cpp starts `python3 digits_objective.py --serve`, which reads one JSON
config per line on stdin and answers one line with the value ("%.17g") on stdout.
Run with Debian's /usr/bin/python3 (python3-sklearn).
"""
import json
import sys
import warnings

import numpy as np
import sklearn
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

EPOCHS = 10

_data = None


def _load():
    global _data
    if _data is None:
        x, y = load_digits(return_X_y=True)
        x_train, x_val, y_train, y_val = train_test_split(
            x, y, test_size=0.25, random_state=0, stratify=y
        )
        scaler = StandardScaler().fit(x_train)
        _data = (scaler.transform(x_train), scaler.transform(x_val), y_train, y_val)
    return _data


def _loss_name(loss):
    """scikit-learn < 1.1 calls the logistic loss "log"."""
    major_minor = tuple(int(p) for p in sklearn.__version__.split(".")[:2] if p.isdigit())
    return "log" if loss == "log_loss" and major_minor < (1, 1) else loss


def objective(config):
    """val_accuracy in [0, 1] of the model trained with `config`."""
    x_train, x_val, y_train, y_val = _load()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter, overflow at large eta0
        model = SGDClassifier(
            loss=_loss_name(config["loss"]),
            alpha=float(config["alpha"]),
            eta0=float(config["eta0"]),
            learning_rate=config["learning_rate"],
            max_iter=EPOCHS,
            tol=None,
            random_state=0,
        )
        model.fit(x_train, y_train)
        value = float(model.score(x_val, y_val))
    return value if np.isfinite(value) else 0.0


def serve():
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write("%.17g\n" % objective(json.loads(line)))
            sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        print(objective(json.loads(sys.argv[1])))
