"""Ray Tune 2.x's `ray.tune.search.basic_variant.BasicVariantGenerator`: grid × num_samples random
draws, run by the scheduler (`search: random`, docs/reference/search.md)."""

from tunebus.tune.search._builtin import BuiltinSearcher


class BasicVariantGenerator(BuiltinSearcher):
    """Ray's BasicVariantGenerator (`search: random`). `random_state` (an int) becomes the
    experiment's `seed`; `constant_grid_search=True` is not supported (TypeError). A param space
    holding `tune.sample_from` is searched by it (given or the default): the scheduler asks the
    driver for each sample_from value (tunebus._driver)."""

    type = "random"

    def __init__(
        self,
        points_to_evaluate=None,
        max_concurrent=0,
        constant_grid_search=False,
        random_state=None,
    ):
        if constant_grid_search:
            raise TypeError(
                "BasicVariantGenerator: constant_grid_search is not supported by " "tunebus"
            )
        super().__init__(points_to_evaluate=points_to_evaluate, max_concurrent=max_concurrent)
        self.seed = random_state


__all__ = ["BasicVariantGenerator"]
