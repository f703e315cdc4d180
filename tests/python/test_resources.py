"""Resources as a trainable sees them through Ray's calls: `train.get_context().
get_trial_resources()` (a PlacementGroupFactory), `tunebus.get_gpu_ids()` (Ray's
`ray.get_gpu_ids()`) and `tune.get_context().get_trial_dir()`, against what the worker gave the
trial (CUDA_VISIBLE_DEVICES, TUNEBUS_RESOURCES) and what the scheduler shows (the trial object's
`gpu_ids`, `resources`, `dir`).

The suite is a real `tunectl up` whose worker offers 2 CPUs and 2 GPUs (`--gpus 2`: no GPU is
needed, GPUs are resources to account for). Two trials asking one CPU and one GPU each hold at a
barrier until both run and the test has read their trial objects, so they run at once and must
get different GPUs.
"""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

import suites

DRIVER = """
import json, os, sys, time
import tunebus
from tunebus import train, tune

def probe(config):
    context = train.get_context()
    resources = context.get_trial_resources()
    seen = {"cuda": os.environ.get("CUDA_VISIBLE_DEVICES"), "gpu_ids": tunebus.get_gpu_ids(),
            "required": resources.required_resources, "bundles": resources.bundles,
            "trial_dir": tune.get_context().get_trial_dir(), "trial_id": context.get_trial_id()}
    barrier = config["barrier"]
    if barrier:
        with open(os.path.join(barrier, context.get_trial_id() + ".json"), "w") as f:
            json.dump(seen, f)
        deadline = time.time() + 60
        while not os.path.exists(os.path.join(barrier, "release")) and time.time() < deadline:
            time.sleep(0.05)
    train.report(seen)

storage, barrier = sys.argv[1], sys.argv[2]
for name, resources, barrier_dir, samples in (("gpus", {"cpu": 1, "gpu": 1}, barrier, 2),
                                              ("nogpu", {"cpu": 0.5}, None, 1)):
    grid = tune.Tuner(tune.with_resources(probe, resources),
                      param_space={"barrier": barrier_dir},
                      tune_config=tune.TuneConfig(num_samples=samples),
                      run_config=tune.RunConfig(name=name, storage_path=storage, verbose=0)).fit()
    print("ERRORS %s %d" % (name, grid.num_errors))
"""


def _last_result(trial_dir):
    with open(os.path.join(trial_dir, "result.json")) as f:
        return json.loads(f.read().splitlines()[-1])


def test_trials_see_their_gpus_and_resources_through_rays_calls(tmp_path, tunectl):
    suite = suites.UpSuite(tunectl, tmp_path / "suite", ["--cpus", "2", "--gpus", "2"])
    try:
        (tmp_path / "project").mkdir()
        script = tmp_path / "project" / "driver.py"
        script.write_text(textwrap.dedent(DRIVER))
        barrier = tmp_path / "barrier"
        barrier.mkdir()
        storage = tmp_path / "results"
        env = suite.env()
        driver = subprocess.Popen(
            [sys.executable, str(script), str(storage), str(barrier)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        try:
            deadline = time.monotonic() + 60
            while len([n for n in os.listdir(barrier) if n.endswith(".json")]) < 2:
                assert driver.poll() is None, driver.stdout.read() + suite.logs()
                assert time.monotonic() < deadline, suite.logs()
                time.sleep(0.05)
            # Both trials are RUNNING now, each holding a GPU: the scheduler's view of them.
            running = {t["trial_id"]: t for t in suite.ctl("ls", "-e", "gpus")}
        finally:
            (barrier / "release").write_text("")
            out, _ = driver.communicate(timeout=120)
        assert driver.returncode == 0, out + suite.logs()
        assert "ERRORS gpus 0" in out and "ERRORS nogpu 0" in out, out

        assert len(running) == 2, running
        assigned = []
        for trial_id, trial in running.items():
            assert trial["status"] == "RUNNING", trial
            assert trial["resources"] == {"cpu": 1, "gpu": 1}, trial
            assert len(trial["gpu_ids"]) == 1, trial
            assigned += trial["gpu_ids"]
            with open(barrier / (trial_id + ".json")) as f:
                seen = json.load(f)
            # What the trainable saw is what the scheduler assigned it.
            assert seen["trial_id"] == trial_id
            assert seen["cuda"] == ",".join(trial["gpu_ids"]), (seen, trial)
            assert seen["gpu_ids"] == [int(i) for i in trial["gpu_ids"]], (seen, trial)
            assert seen["required"] == {"CPU": 1.0, "GPU": 1.0}, seen
            assert seen["bundles"] == [{"CPU": 1.0, "GPU": 1.0}], seen
            assert seen["trial_dir"] == trial["dir"], (seen, trial)
            # ... and what it reported is in its result file.
            result = _last_result(trial["dir"])
            assert {k: result[k] for k in seen} == seen, result
        assert sorted(assigned) == ["0", "1"], running  # at once, so on different GPUs

        # A trial without a GPU: CUDA_VISIBLE_DEVICES is "", no GPU ids, CPU 0.5 only.
        [trial_dir] = [
            os.path.join(storage, "nogpu", d)
            for d in os.listdir(storage / "nogpu")
            if os.path.isdir(os.path.join(storage, "nogpu", d))
        ]
        result = _last_result(trial_dir)
        assert result["cuda"] == "" and result["gpu_ids"] == [], result
        assert result["required"] == {"CPU": 0.5}, result
        assert result["trial_dir"] == trial_dir, result
    finally:
        suite.close()


def test_outside_a_trial_resources_come_from_the_environment_as_ray_reads_it(monkeypatch):
    # Without TUNEBUS_RESOURCES (a script run by hand) the trial resources are Ray's default for
    # a function trainable, one CPU, plus a GPU per id in CUDA_VISIBLE_DEVICES; GPU ids are ints
    # when numeric and strings otherwise (UUIDs), in CUDA_VISIBLE_DEVICES's order.
    import tunebus
    from tunebus import train
    from tunebus._resources import PlacementGroupFactory

    monkeypatch.delenv("TUNEBUS_RESOURCES", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert tunebus.get_gpu_ids() == []
    assert train.get_context().get_trial_resources().required_resources == {"CPU": 1.0}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,GPU-8f2a1c,1")
    assert tunebus.get_gpu_ids() == [3, "GPU-8f2a1c", 1]
    assert train.get_context().get_trial_resources().required_resources == {"CPU": 1.0, "GPU": 3.0}
    monkeypatch.setenv("TUNEBUS_RESOURCES", '{"cpu":2.0,"gpu":0.5,"memory":1e9,"tpu":0}')
    pgf = train.get_context().get_trial_resources()
    assert pgf.required_resources == {"CPU": 2.0, "GPU": 0.5, "memory": 1e9}
    assert pgf == PlacementGroupFactory([{"CPU": 2, "GPU": 0.5, "memory": 1e9}])
    assert pgf.strategy == "PACK" and pgf.head_cpus == 2.0 and not pgf.head_bundle_is_empty
    # Several bundles add up, as Ray's required_resources does.
    assert PlacementGroupFactory([{"CPU": 1}, {"CPU": 2, "GPU": 1}]).required_resources == {
        "CPU": 3.0,
        "GPU": 1.0,
    }
    with pytest.raises(ValueError):
        PlacementGroupFactory([])
