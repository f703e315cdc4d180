"""A small convolutional network on scikit-learn's 8x8 digits, tuned with ASHA or with Population
Based Training: Ray Tune 2.x's PyTorch function-trainable pattern (as in Ray's
`mnist_pytorch.py` and `pbt_convnet_function_example.py`), ported by changing only the imports.

    /usr/bin/python3 examples/pytorch/tune_cnn.py --scheduler asha [--quick]
    /usr/bin/python3 examples/pytorch/tune_cnn.py --scheduler pbt  [--quick]

Each training iteration trains on `epoch_size` images (512, Ray's EPOCH_SIZE; 128 with --quick)
in minibatches of 64 and evaluates on the 450 held-out ones, then reports `mean_accuracy` with a
checkpoint: one file, `checkpoint.pt`, holding the model's and the Adam optimizer's `state_dict`s
(11.3 MB: the 1792-wide hidden layer has 0.92 M weights, and Adam keeps two moments of each). A
trial started from a checkpoint (`train.get_checkpoint()`: a PBT exploit, or a retry after a
failure) loads both and goes on from there with its own (possibly mutated) `lr` and
`weight_decay`.

Besides Ray's metrics each result carries `state_sha256`, a SHA-256 of every tensor of the saved
state (model weights and Adam's moments), and `worker`, the tunebus worker that ran it
(TUNEBUS_WORKER_ID; the host name elsewhere); the first result after a restore adds
`restored_sha256` (the same digest of the state just loaded) and `restored_from` (who saved it:
trial id, iteration, worker, digest). tests/python/test_deep_learning.py checks with them that a
PBT exploit loaded the donor's weights, saved on another worker.

The embedded suite starts and stops with the script (one worker); `TUNEBUS_ADDRESS` (or
`tunebus.init(address=...)`) sends it to a running suite of several workers instead. Needs
python3-torch and python3-sklearn, and the driver's modules (python3-zmq python3-msgpack
python3-cloudpickle). Results go to examples/pytorch/results/ unless `--storage PATH`.
"""

import argparse
import hashlib
import os
import socket
import sys
import tempfile

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python")
)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from tunebus import train, tune  # noqa: E402
from tunebus.train import Checkpoint  # noqa: E402
from tunebus.tune.schedulers import ASHAScheduler, PopulationBasedTraining  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKPOINT_FILE = "checkpoint.pt"
WIDTH = 1792  # the wide hidden layer: 32*4*4 inputs x 1792 = 0.92 M weights
BATCH_SIZE = 64


class ConvNet(nn.Module):
    """8x8x1 image → two 3x3 convolutions (16, 32 channels) → 2x2 max-pool → 512 → 1792 → 10
    logits. 942,026 parameters."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, WIDTH)
        self.fc2 = nn.Linear(WIDTH, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def load_data():
    """The 1797 digit images as float tensors (N, 1, 8, 8) scaled to [0, 1], with their labels:
    a fixed stratified split (random_state=0) of 1347 training and 450 validation images."""
    x, y = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(
        x, y, test_size=0.25, random_state=0, stratify=y
    )

    def images(a):
        return torch.tensor(a / 16.0, dtype=torch.float32).reshape(-1, 1, 8, 8)

    return images(x_train), images(x_val), torch.tensor(y_train), torch.tensor(y_val)


def state_digest(model_state, optimizer_state):
    """SHA-256 (hex) of every tensor of a model's state_dict (in its order) and of the optimizer's
    per-parameter state (Adam's step and moments, by parameter index): equal digests, equal
    weights."""
    h = hashlib.sha256()
    for name, tensor in model_state.items():
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    for index in sorted(optimizer_state["state"]):
        for name, value in sorted(optimizer_state["state"][index].items()):
            if torch.is_tensor(value):
                h.update(("%s.%s" % (index, name)).encode())
                h.update(value.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def where():
    """The tunebus worker running this trial (TUNEBUS_WORKER_ID), else the host name."""
    return os.environ.get("TUNEBUS_WORKER_ID") or socket.gethostname()


def train_epoch(model, optimizer, x, y, generator, epoch_size):
    model.train()
    order = torch.randperm(len(x), generator=generator)[:epoch_size]
    for start in range(0, epoch_size, BATCH_SIZE):
        batch = order[start : start + BATCH_SIZE]
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x[batch]), y[batch])
        loss.backward()
        optimizer.step()


def evaluate(model, x, y):
    """(accuracy in [0, 1], mean cross-entropy) on (x, y)."""
    model.eval()
    with torch.no_grad():
        logits = model(x)
        return ((logits.argmax(1) == y).float().mean().item(), F.cross_entropy(logits, y).item())


def train_cnn(config):
    """One trial: `config` has Adam's `lr` and `weight_decay`, and `epoch_size` (training images
    per iteration). Reports until Tune stops it."""
    torch.set_num_threads(1)  # one CPU per trial (resources_per_trial)
    x_train, x_val, y_train, y_val = load_data()
    model = ConvNet()
    optimizer = torch.optim.Adam(
        model.parameters(), lr=config["lr"], weight_decay=config["weight_decay"]
    )
    step, restored = 0, {}
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            saved = torch.load(os.path.join(folder, CHECKPOINT_FILE))
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        step = saved["meta"]["iteration"]
        restored = {
            "restored_sha256": state_digest(model.state_dict(), optimizer.state_dict()),
            "restored_from": saved["meta"],
        }
    for group in optimizer.param_groups:  # a PBT exploit brings a mutated config
        group["lr"], group["weight_decay"] = config["lr"], config["weight_decay"]
    generator = torch.Generator().manual_seed(step)
    while True:
        train_epoch(model, optimizer, x_train, y_train, generator, config["epoch_size"])
        step += 1
        accuracy, loss = evaluate(model, x_val, y_val)
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
        digest = state_digest(state["model"], state["optimizer"])
        meta = {
            "trial_id": train.get_context().get_trial_id(),
            "iteration": step,
            "worker": where(),
            "sha256": digest,
        }
        with tempfile.TemporaryDirectory() as folder:
            torch.save(dict(state, meta=meta), os.path.join(folder, CHECKPOINT_FILE))
            train.report(
                {
                    "mean_accuracy": accuracy,
                    "val_loss": loss,
                    "state_sha256": digest,
                    "worker": where(),
                    **restored,
                },
                checkpoint=Checkpoint.from_directory(folder),
            )
        restored = {}


def run(scheduler_name, quick, storage):
    """Runs the experiment; returns the ResultGrid."""
    trainable = tune.with_resources(train_cnn, {"cpu": 1})
    if scheduler_name == "asha":
        iterations, samples = (4, 4) if quick else (12, 8)
        scheduler = ASHAScheduler(max_t=iterations, grace_period=1, reduction_factor=2)
        checkpoints = train.CheckpointConfig(
            num_to_keep=2, checkpoint_score_attribute="mean_accuracy", checkpoint_score_order="max"
        )
    else:
        iterations, samples = (12, 4) if quick else (20, 8)
        scheduler = PopulationBasedTraining(
            # quantile_fraction=0.5: the lower half exploits the upper half (Ray's default is
            # the lower and upper quarters), so a short run sees several exploits.
            time_attr="training_iteration",
            perturbation_interval=2,
            quantile_fraction=0.5,
            hyperparam_mutations={
                "lr": tune.loguniform(1e-4, 1e-2),
                "weight_decay": [0.0, 1e-5, 1e-4, 1e-3],
            },
        )
        # The newest few: an exploit restores the donor's newest checkpoint.
        checkpoints = train.CheckpointConfig(num_to_keep=4)
    tuner = tune.Tuner(
        trainable,
        param_space={
            "lr": tune.loguniform(1e-4, 1e-2),
            "weight_decay": tune.choice([0.0, 1e-5, 1e-4]),
            "epoch_size": 128 if quick else 512,
        },
        tune_config=tune.TuneConfig(
            metric="mean_accuracy", mode="max", num_samples=samples, scheduler=scheduler
        ),
        run_config=train.RunConfig(
            name="cnn-%s" % scheduler_name,
            storage_path=storage,
            stop={"training_iteration": iterations},
            checkpoint_config=checkpoints,
        ),
    )
    return tuner.fit()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scheduler", choices=["asha", "pbt"], default="asha")
    parser.add_argument("--quick", action="store_true", help="CI size: fewer trials, iterations")
    parser.add_argument("--storage", default=os.path.join(HERE, "results"))
    args = parser.parse_args()
    grid = run(args.scheduler, args.quick, args.storage)
    best = grid.get_best_result()
    print(
        "best trial %s: mean_accuracy %.4f at iteration %d with lr %.4g, weight_decay %.3g "
        "(%d trials, %d errors)"
        % (
            best.metrics["trial_id"],
            best.metrics["mean_accuracy"],
            best.metrics["training_iteration"],
            best.config["lr"],
            best.config["weight_decay"],
            len(grid),
            grid.num_errors,
        )
    )
    # The best checkpoint, fetched from the checkpoint-store and loaded here as a trial would.
    checkpoint, _ = max(best.best_checkpoints, key=lambda pair: pair[1].get("mean_accuracy", -1))
    with checkpoint.as_directory() as folder:
        path = os.path.join(folder, CHECKPOINT_FILE)
        saved = torch.load(path)
        size = os.path.getsize(path)
    model = ConvNet()
    model.load_state_dict(saved["model"])
    x_val, y_val = load_data()[1::2]
    accuracy, _ = evaluate(model, x_val, y_val)
    print(
        "best checkpoint: iteration %d, %.1f MB, sha256 %s, mean_accuracy %.4f when reloaded"
        % (
            saved["meta"]["iteration"],
            size / 1e6,
            state_digest(saved["model"], saved["optimizer"]),
            accuracy,
        )
    )


if __name__ == "__main__":
    main()
