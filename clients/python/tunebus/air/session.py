"""`import tunebus.air.session`: the module tunebus.train.session."""

import sys

from tunebus.train import session as _session

sys.modules[__name__] = _session
