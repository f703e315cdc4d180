"""Ray Tune's XGBoost callbacks (`ray.tune.integration.xgboost` →
`tunebus.tune.integration.xgboost`), with Ray 2.7's behaviour: `TuneReportCheckpointCallback`
reports XGBoost's evaluation metrics to Tune after every boosting round and, every `frequency`
rounds, a checkpoint holding the booster (`Booster.save_model` into `<checkpoint>/<filename>`);
`TuneReportCallback` reports without checkpoints. Both are `xgboost.callback.TrainingCallback`s:
pass them to `xgboost.train(..., callbacks=[...])` inside a function trainable. Importing this
module imports xgboost (Debian: python3-xgboost).

Restoring is the trainable's part, as in Ray: load the booster from `train.get_checkpoint()`
(`TuneReportCheckpointCallback.get_model(checkpoint, filename)`) and pass it to
`xgboost.train(..., xgb_model=booster)` with the rounds still to do.
"""

import os
import tempfile

from tunebus._checkpoint import Checkpoint
from tunebus._session import report

try:
    from xgboost import Booster
    from xgboost.callback import TrainingCallback
except ImportError as e:  # pragma: no cover - depends on the machine
    raise ImportError(
        "tunebus.tune.integration.xgboost needs the Python module xgboost (Debian: "
        "apt-get install python3-xgboost; pip: xgboost): %s" % e
    ) from e


def _flatten(evals_log):
    """XGBoost's evals_log ({"eval": {"logloss": [0.6, 0.5]}}) as Ray's flatten_dict with "-"
    and the newest value of each list: {"eval-logloss": 0.5}. Under `xgboost.cv` a value is a
    (mean, std) pair, reported as is (a list in the result), as in Ray."""
    flat = {}
    for data_name, metrics in evals_log.items():
        if isinstance(metrics, dict):
            for metric_name, values in metrics.items():
                flat["%s-%s" % (data_name, metric_name)] = values[-1] if values else None
        else:  # xgboost < 1.3 gave a list of (name, value) pairs
            flat[data_name] = metrics
    return flat


class TuneCallback(TrainingCallback):
    """Base class of Tune's XGBoost callbacks (Ray's `TuneCallback`)."""

    def after_iteration(self, model, epoch, evals_log):
        raise NotImplementedError


class TuneReportCheckpointCallback(TuneCallback):
    """Reports XGBoost's metrics after each boosting round, with a checkpoint every `frequency`
    rounds (Ray 2.7's `ray.tune.integration.xgboost.TuneReportCheckpointCallback`).

    Args:
        metrics: what to report. None: every evaluation metric under XGBoost's flattened name,
            `"<evals name>-<metric>"` (`"eval-logloss"`). A str or a list of str: those flattened
            names, reported under the same names. A dict: Tune name → flattened XGBoost name
            (`{"loss": "eval-logloss"}`). A name XGBoost did not log raises KeyError.
        filename: the booster's file in the checkpoint folder (default "checkpoint"; a ".json"
            or ".ubj" suffix picks XGBoost's JSON or UBJSON format, other names its binary one).
        frequency: rounds between checkpoints (default 1: every round; 0: never). The round
            index `epoch` XGBoost passes counts from 0: a checkpoint goes with the report of
            round `epoch` when `epoch % frequency == 0`, except round 0 when `frequency` > 1.
        results_postprocessing_fn: called with the dict about to be reported; what it returns is
            reported instead (e.g. averaging the (mean, std) pairs of `xgboost.cv`).
        checkpoint_at_end: Ray 2.10's argument (default False here, as Ray 2.7 had none): when
            training ends on a round without a checkpoint, the last round's metrics are reported
            once more with the final booster as checkpoint, as Ray 2.10's `after_training` does.

    Each report is one Tune result (`training_iteration` counts rounds, from 1); a checkpoint is
    stored in the checkpoint-store as that result's checkpoint.
    """

    def __init__(
        self,
        metrics=None,
        filename="checkpoint",
        frequency=1,
        results_postprocessing_fn=None,
        checkpoint_at_end=False,
    ):
        if isinstance(metrics, str):
            metrics = [metrics]
        self._metrics = metrics
        self._filename = filename
        self._frequency = frequency
        self._results_postprocessing_fn = results_postprocessing_fn
        self._checkpoint_at_end = checkpoint_at_end
        self._last_metrics = None  # the newest round's report, for checkpoint_at_end
        self._checkpointed_last_round = False

    @classmethod
    def get_model(cls, checkpoint, filename="checkpoint"):
        """The `xgboost.Booster` saved in `checkpoint` (a `train.Checkpoint`) as `filename`
        (Ray 2.10's `get_model`)."""
        with checkpoint.as_directory() as folder:
            booster = Booster()
            booster.load_model(os.path.join(folder, filename))
            return booster

    def _get_report_dict(self, evals_log):
        flat = _flatten(evals_log)
        if not self._metrics:
            chosen = flat
        elif isinstance(self._metrics, dict):
            chosen = {name: flat[xgb_name] for name, xgb_name in self._metrics.items()}
        else:
            chosen = {name: flat[name] for name in self._metrics}
        if self._results_postprocessing_fn:
            chosen = self._results_postprocessing_fn(chosen)
        return chosen

    def _checkpoint_due(self, epoch):
        frequency = self._frequency
        return bool(frequency) and epoch % frequency == 0 and (epoch > 0 or frequency == 1)

    def _report_with_booster(self, metrics, model):
        # report() copies the folder before it returns, so it can go right after.
        with tempfile.TemporaryDirectory(prefix="tunebus_xgboost_") as folder:
            model.save_model(os.path.join(folder, self._filename))
            report(metrics, checkpoint=Checkpoint.from_directory(folder))

    def after_iteration(self, model, epoch, evals_log):
        metrics = self._get_report_dict(evals_log)
        self._last_metrics = metrics
        self._checkpointed_last_round = self._checkpoint_due(epoch)
        if self._checkpointed_last_round:
            self._report_with_booster(metrics, model)
        else:
            report(metrics)
        return False  # False: XGBoost goes on (a `stop` decision ends the process in report)

    def after_training(self, model):
        if (
            self._checkpoint_at_end
            and self._last_metrics is not None
            and not self._checkpointed_last_round
        ):
            self._report_with_booster(self._last_metrics, model)
        return model


class TuneReportCallback(TuneReportCheckpointCallback):
    """Reports XGBoost's metrics after each boosting round, without checkpoints (Ray 2.0-2.7's
    `TuneReportCallback`; Ray 2.7 deprecates it for TuneReportCheckpointCallback). `metrics` and
    `results_postprocessing_fn` as in TuneReportCheckpointCallback."""

    def __init__(self, metrics=None, results_postprocessing_fn=None):
        super().__init__(
            metrics=metrics, frequency=0, results_postprocessing_fn=results_postprocessing_fn
        )


__all__ = ["TuneCallback", "TuneReportCheckpointCallback", "TuneReportCallback"]
