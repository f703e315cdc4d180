"""examples/bash: a trainable in bash speaking the command trainable protocol (PROTOCOL.md §7) by
hand, run as docs/how-to/other-language-trainable.md shows: `tunectl run experiment.yaml` from a
copy of the folder, with the tunectl built here."""

import glob
import json
import os
import shutil
import subprocess

from conftest import SOURCE_DIR


def test_bash_trainable_runs_under_asha(tunectl, tmp_path):
    folder = tmp_path / "bash"
    shutil.copytree(os.path.join(SOURCE_DIR, "examples", "bash"), folder)
    run = subprocess.run(
        [tunectl, "run", "experiment.yaml"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Experiment bash-quadratic FINISHED" in run.stdout, run.stdout
    trials = sorted(glob.glob(str(folder / "results" / "bash-quadratic" / "*" / "result.json")))
    assert len(trials) == 6, trials
    last = []
    for path in trials:
        with open(path) as f:
            rows = [json.loads(line) for line in f]
        assert rows, path
        for number, row in enumerate(rows, 1):
            # The trainable's own keys beside what tunebus adds; one row per step.
            assert row["step"] == row["training_iteration"] == number, (path, row)
            x = row["config"]["x"]
            assert abs(row["loss"] - ((x - 3) ** 2 + 1 / number)) < 1e-5, (path, row)
        last.append(rows[-1]["training_iteration"])
    # ASHA (max_t 10, grace_period 2, reduction_factor 2) runs the best to the end and stops
    # others at a rung.
    assert max(last) == 10, last
    assert min(last) < 10, last
