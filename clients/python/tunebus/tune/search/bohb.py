"""Ray Tune 2.x's `ray.tune.search.bohb.TuneBOHB`, as tunebus's built-in BOHB.

Ray's TuneBOHB drives HpBandSter's BOHB config generator (hpbandster + ConfigSpace, which Debian
does not package). The scheduler implements that config generator in C++ (`search: bohb`,
docs/reference/search.md "bohb"), so this TuneBOHB needs neither library: a Ray script that imports
it from
here runs unchanged, paired with `HyperBandForBOHB` as in Ray. What differs: the search space is
the Tuner's `param_space` (Ray also takes `space`, a ConfigSpace or a dict of Ray domains; here
`space` is refused with TuneError), and the model runs in the scheduler, not the driver.
"""

from tunebus._errors import TuneError
from tunebus.tune.search._builtin import BuiltinSearcher


class TuneBOHB(BuiltinSearcher):
    """tunebus's BOHB searcher (`search: bohb`), Ray's TuneBOHB in C++ inside the scheduler; pair
    it with `HyperBandForBOHB`. Options: min_points_in_model, top_n_percent, num_samples,
    random_fraction, bandwidth_factor, min_bandwidth (docs/reference/search.md); `seed` becomes the
    experiment's seed. Ray's `bohb_config` dict is accepted as the same options."""

    type = "bohb"

    def __init__(
        self,
        space=None,
        bohb_config=None,
        metric=None,
        mode=None,
        points_to_evaluate=None,
        seed=None,
        max_concurrent=0,
        **options,
    ):
        if space is not None:
            raise TuneError(
                "invalid_argument",
                "TuneBOHB: pass the search space as the Tuner's "
                "param_space (tunebus's TuneBOHB runs in the scheduler, which "
                "samples the param space; it takes no `space`)",
            )
        merged = dict(bohb_config or {})
        merged.update(options)
        super().__init__(metric, mode, points_to_evaluate, None, max_concurrent, **merged)
        self.seed = seed


__all__ = ["TuneBOHB"]
