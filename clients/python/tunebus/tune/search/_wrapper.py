"""The common part of Ray's searchers that wrap another (ConcurrencyLimiter, Repeater)."""

import copy
import logging

from tunebus.tune.search.searcher import Searcher

LOG = logging.getLogger("tunebus")


def set_search_properties(searcher, metric, mode, config, **spec):
    """Ray's `_set_search_properties_backwards_compatible`: a searcher whose
    set_search_properties takes no `**spec` is called without it."""
    try:
        return searcher.set_search_properties(metric, mode, config, **spec)
    except TypeError as e:
        if "unexpected keyword argument" not in str(e):
            raise
        LOG.warning(
            "Please update custom Searcher to take in function signature as "
            "``def set_search_properties(metric, mode, config, **spec) -> bool``."
        )
        return searcher.set_search_properties(metric, mode, config)


class WrapperSearcher(Searcher):
    """A searcher around `self.searcher`: its metric, mode and search properties are the wrapped
    one's; its state (get_state) is its own attributes but the wrapped searcher."""

    @property
    def metric(self):
        return self.searcher.metric

    @property
    def mode(self):
        return self.searcher.mode

    def set_search_properties(self, metric, mode, config=None, **spec):
        return set_search_properties(self.searcher, metric, mode, config, **spec)

    def get_state(self):
        state = self.__dict__.copy()
        del state["searcher"]
        return copy.deepcopy(state)

    def set_state(self, state):
        self.__dict__.update(state)

    def _tunebus_copy(self):
        clone = object.__new__(type(self))
        clone.__dict__.update(self.get_state())
        clone.searcher = self.searcher._tunebus_copy()
        return clone

    def _tunebus_take(self, fresh):
        """The wrapped searcher the user may hold takes its rebuilt state too."""
        inner = self.searcher
        inner._tunebus_take(fresh.searcher)
        state = dict(fresh.__dict__, searcher=inner)
        self.__dict__.clear()
        self.__dict__.update(state)

    def _tunebus_space(self):
        return self.searcher._tunebus_space()


__all__ = ["WrapperSearcher", "set_search_properties"]
