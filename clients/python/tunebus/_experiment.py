"""`tunebus.Experiment`: a running (or finished) experiment on a suite's control socket."""

import json

from tunebus import _suite
from tunebus._control import ControlClient
from tunebus._results import ResultGrid


class Experiment:
    """Control and read one experiment over the scheduler's control socket (PROTOCOL.md §2).

    `name`: an experiment name or journal name (`NAME-ID`); None = the only unfinished one (with
    several, the scheduler refuses with `failed_precondition` listing them), else the newest.
    `connect`: the control endpoint; default `tunebus.init`'s address, then TUNEBUS_ADDRESS, then
    this process's embedded suite. Every method raises `TuneError` with the scheduler's `code` and
    `message` when it refuses (e.g. `not_found` for an unknown trial id).
    """

    def __init__(self, name=None, connect=None, timeout_s=10.0):
        self.name = name
        self.endpoint = connect or _suite.endpoint()[0]
        self._client = ControlClient(self.endpoint, timeout_s)

    def _request(self, type_, **fields):  # names the experiment, when given
        if self.name:
            fields["experiment"] = self.name
        return self._client.request(type_, **fields)

    def status(self):
        """The experiment summary: `{name, experiment_id, status, counts, total, metric, mode,
        results_dir, best, searcher, ...}`."""
        return self._request("get_experiment")

    def trials(self, status=""):
        """The trial objects (`{trial_id, status, config, last_result, checkpoints, ...}`),
        optionally only those of one status (PENDING, RUNNING, PAUSED, TERMINATED, ERROR)."""
        return self._request("list_trials", status=status)

    def trial(self, trial_id):
        """One trial as the scheduler shows it: a dict, the fields `tunectl show TRIAL_ID -o
        json` prints. Raises TuneError (the scheduler's code and message) for an unknown id."""
        return self._request("show_trial", trial_id=trial_id)

    def stop(self, trial_id):
        """Stops one trial: `{trial_id, status, message}`."""
        return self._request("stop_trial_command", trial_id=trial_id)

    def stop_all(self):
        """Stops every unfinished trial and ends the experiment."""
        return self._request("stop_experiment")

    def pause(self, trial_id):
        """Checkpoints a trial and frees its resources (PAUSED once saved)."""
        return self._request("pause_trial_command", trial_id=trial_id)

    def resume(self, trial_id):
        """Continues a paused trial from its newest checkpoint."""
        return self._request("resume_trial_command", trial_id=trial_id)

    def add(self, config):
        """Adds a trial with an explicit config (a JSON-able dict); returns its trial object."""
        return self._request("add_trial_command", config_json=json.dumps(config))

    def results(self):
        """A ResultGrid of the experiment's trials (list_trials), their histories (list_results)
        and checkpoints (fetch_checkpoint), all through the control socket."""
        summary = self.status()
        return ResultGrid.from_suite(
            self.endpoint,
            summary.get("journal") or summary.get("name"),
            self.trials(),
            summary.get("metric") or None,
            summary.get("mode") or None,
            summary["results_dir"],
        )
