"""Reads a tunebus results folder the way a Ray Tune user's notebook does, with tools that are
not tunebus's: pandas for progress.csv / result.json, protoc + Python protobuf for the
TensorBoard event files, and the crc32c module (Debian python3-crc32c; a plain table-driven
CRC-32C here when it is missing) for their TFRecord framing.

Usage: read_results.py <experiment_dir> <event.proto>
Checks every trial folder and prints one JSON summary line; exits non-zero on the first
mismatch (an AssertionError naming it).
"""
import glob
import importlib
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

import pandas as pd

try:
    from crc32c import crc32c
except ImportError:  # an independent check all the same: table-driven, Castagnoli polynomial
    _TABLE = []
    for _i in range(256):
        _c = _i
        for _ in range(8):
            _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
        _TABLE.append(_c)

    def crc32c(data):
        c = 0xFFFFFFFF
        for b in data:
            c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
        return c ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def event_module(proto):
    out = tempfile.mkdtemp()
    subprocess.run(
        ["protoc", f"--proto_path={os.path.dirname(proto)}", f"--python_out={out}", proto],
        check=True,
    )
    sys.path.insert(0, out)
    return importlib.import_module(os.path.splitext(os.path.basename(proto))[0] + "_pb2")


def read_events(path, pb2):
    data = open(path, "rb").read()
    events, at = [], 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        (length_crc,) = struct.unpack_from("<I", data, at + 8)
        assert length_crc == masked(crc32c(data[at : at + 8])), f"{path}: bad length CRC at {at}"
        body = data[at + 12 : at + 12 + length]
        (body_crc,) = struct.unpack_from("<I", data, at + 12 + length)
        assert body_crc == masked(crc32c(body)), f"{path}: bad data CRC at {at}"
        event = pb2.Event()
        event.ParseFromString(body)
        events.append(event)
        at += 12 + length + 4
    return events


def main():
    experiment_dir, proto = sys.argv[1], sys.argv[2]
    pb2 = event_module(proto)
    summary = {"trials": 0, "rows": 0, "events": 0}
    for trial_dir in sorted(glob.glob(os.path.join(experiment_dir, "*", ""))):
        params = json.load(open(os.path.join(trial_dir, "params.json")))
        progress = pd.read_csv(os.path.join(trial_dir, "progress.csv"))
        results = pd.read_json(os.path.join(trial_dir, "result.json"), lines=True)
        assert len(progress) == len(results) > 0, (trial_dir, len(progress), len(results))
        for key, value in params.items():
            assert (progress[f"config/{key}"] == value).all(), (
                trial_dir,
                key,
                progress[f"config/{key}"].tolist(),
            )
            assert all(c[key] == value for c in results["config"]), (trial_dir, key)
        for column in [
            "training_iteration",
            "time_this_iter_s",
            "time_total_s",
            "timestamp",
            "date",
            "pid",
            "hostname",
            "node_ip",
            "trial_id",
            "done",
            "iterations_since_restore",
            "info/a",
        ]:
            assert column in progress.columns, (trial_dir, column, list(progress.columns))
        assert all(
            re.fullmatch(r"\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d", d) for d in progress["date"]
        ), progress["date"].tolist()
        # Each reported result once: the trainable returned without reporting done, so no row
        # says done.
        assert not progress["done"].any(), progress["done"].tolist()
        assert not results["done"].any(), results["done"].tolist()
        assert progress["training_iteration"].tolist() == list(
            range(1, len(progress) + 1)
        ), progress["training_iteration"].tolist()
        assert (progress["info/a"] == progress["score"] * 10).all(), progress[["info/a", "score"]]
        files = glob.glob(os.path.join(trial_dir, "events.out.tfevents.*"))
        assert len(files) == 1, files
        events = read_events(files[0], pb2)
        assert events[0].file_version == "brain.Event:2", events[0]
        assert len(events) == len(progress) + 1, (len(events), len(progress))
        for event, (_, row) in zip(events[1:], progress.iterrows()):
            assert event.step == row["training_iteration"], (event.step, row["training_iteration"])
            assert event.wall_time == row["timestamp"], (event.wall_time, row["timestamp"])
            scalars = {v.tag: v.simple_value for v in event.summary.value}
            assert scalars["ray/tune/score"] == row["score"], scalars
            assert scalars["ray/tune/info/a"] == row["info/a"], scalars
            assert scalars["ray/tune/done"] == float(row["done"]), scalars
        summary["trials"] += 1
        summary["rows"] += len(progress)
        summary["events"] += len(events)
    assert summary["trials"] > 0, f"no trial folders in {experiment_dir}"
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
