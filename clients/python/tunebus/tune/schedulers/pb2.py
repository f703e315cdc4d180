"""Ray's `ray.tune.schedulers.pb2`: PB2 is not implemented by tunebus (TuneError at
construction, naming PopulationBasedTraining)."""

from tunebus.tune.schedulers._missing import PB2

__all__ = ["PB2"]
