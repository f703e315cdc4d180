"""Resources as a trainable sees them (Ray 2.x's `train.get_context().get_trial_resources()` and
`ray.get_gpu_ids()`), read from the environment the trial-worker sets for each attempt
(proto/PROTOCOL.md §7): TUNEBUS_RESOURCES, a JSON object of whole units the attempt was allocated
(`{"cpu": 1.0, "gpu": 1.0}`, memory in bytes, custom resources by name), and CUDA_VISIBLE_DEVICES,
the comma-joined ids of the GPUs the worker gave it. Stdlib only: a worker's interpreter may have
nothing else.
"""

import json
import os

# tunebus's resource names → Ray's (resource_dict_to_pg_factory in Ray 2.x); others keep theirs.
_RAY_NAMES = {"cpu": "CPU", "gpu": "GPU", "memory": "memory"}


class PlacementGroupFactory:
    """Ray 2.x's `tune.PlacementGroupFactory` as a trial's resources: `bundles` (a list of dicts
    of resource name → amount, Ray's names "CPU", "GPU", "memory", custom names as given) and a
    placement `strategy` ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD").

    As in Ray (2.0-2.9), amounts of 0 are dropped from the bundles, amounts are floats, and
    `required_resources` is the sum over all bundles: `{"CPU": 1.0, "GPU": 1.0}` for a trial
    given one CPU and one GPU, `{"CPU": 1.0}` for one without a GPU. Two factories are equal
    when their bundles and strategy are. tunebus places a trial as one bundle on one worker, so
    a factory it builds has one bundle."""

    def __init__(self, bundles, strategy="PACK", *args, **kwargs):
        if not bundles:
            raise ValueError("PlacementGroupFactory needs at least one bundle")
        self._bundles = [
            {str(k): float(v) for k, v in dict(bundle).items() if v != 0} for bundle in bundles
        ]
        self._strategy = strategy
        # Ray passes these on to ray.util.placement_group (name, lifetime, ...): kept, unused.
        self._args = args
        self._kwargs = kwargs

    @property
    def bundles(self):
        """The bundles, each a dict of resource name → amount (floats; copies)."""
        return [dict(b) for b in self._bundles]

    @property
    def strategy(self):
        """The placement strategy given ("PACK", "SPREAD", ...): kept for Ray's API; tunebus
        places a trial's summed bundles on one worker whatever it is."""
        return self._strategy

    @property
    def head_bundle_is_empty(self):
        """True when the first bundle asks for nothing (Ray: the trainable's own actor takes no
        resources)."""
        return not self._bundles[0]

    @property
    def head_cpus(self):
        """CPUs of the first bundle (float)."""
        return self._bundles[0].get("CPU", 0.0)

    @property
    def required_resources(self):
        """Resource name → amount summed over every bundle (floats)."""
        total = {}
        for bundle in self._bundles:
            for name, amount in bundle.items():
                total[name] = total.get(name, 0.0) + amount
        return total

    def __eq__(self, other):
        return (
            isinstance(other, PlacementGroupFactory)
            and self._bundles == other._bundles
            and self._strategy == other._strategy
        )

    def __hash__(self):
        return hash((json.dumps(self._bundles, sort_keys=True), self._strategy))

    def __repr__(self):
        return "<PlacementGroupFactory (bundles=%r, strategy=%r)>" % (self._bundles, self._strategy)


def ray_resources(amounts):
    """A dict of tunebus resource amounts (`{"cpu": 1, "gpu": 0.5, "memory": 2e9}`) with Ray's
    names (`{"CPU": 1.0, "GPU": 0.5, "memory": 2e9}`), zero amounts left out."""
    return {_RAY_NAMES.get(name, name): float(amount) for name, amount in amounts.items() if amount}


def trial_resources():
    """The running attempt's resources as a PlacementGroupFactory of one bundle, from
    TUNEBUS_RESOURCES. Without it (outside tunebus, or a trial-worker built before it set that
    variable) the bundle is Ray's default for a function trainable, one CPU, plus one GPU
    per id in CUDA_VISIBLE_DEVICES."""
    raw = os.environ.get("TUNEBUS_RESOURCES")
    if raw:
        amounts = json.loads(raw)
    else:
        amounts = {"cpu": 1, "gpu": len(get_gpu_ids())}
    return PlacementGroupFactory([ray_resources(amounts)])


def get_gpu_ids():
    """Ray's `ray.get_gpu_ids()` (Ray 2.0-2.9) inside a trainable: the ids of the GPUs the
    attempt was given, in CUDA_VISIBLE_DEVICES's order, each an int when it is a number (`[0,
    1]`) and the string otherwise (GPU UUIDs such as "GPU-5f3c..."). `[]` when the trial has no
    GPU (the worker sets CUDA_VISIBLE_DEVICES to "") and outside a trial where the variable is
    unset."""
    ids = []
    for item in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(","):
        item = item.strip()
        if item:
            ids.append(int(item) if item.isdigit() else item)
    return ids
