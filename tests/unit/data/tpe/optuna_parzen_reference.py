#!/usr/bin/python3
"""Reference values for tests/unit/parzen_estimator_test.cpp, from Optuna 3.1.0's own
_ParzenEstimator (optuna/samplers/_tpe/parzen_estimator.py). Run: /usr/bin/python3 this file.
The test hard-codes what it prints (repr, 17 significant digits).

Optuna 3.1.0's truncnorm.logpdf leaves out -log(scale) (optuna/optuna#5109, fixed by #5110 in
Optuna 3.5), so its continuous log densities are not normalised. tunebus computes the fixed
density; "log_pdf" below is Optuna 3.1.0's estimator with #5110's one-line fix patched in, and
"log_pdf_3.1.0" the unpatched value (equal for stepped and categorical parameters)."""
import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers._tpe import _truncnorm
from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator, _ParzenEstimatorParameters
from optuna.samplers._tpe.sampler import default_gamma, default_weights

assert optuna.__version__ == "3.1.0", optuna.__version__


def params(multivariate=False, endpoints=False, prior=True, magic_clip=True):
    return _ParzenEstimatorParameters(
        prior, 1.0, magic_clip, endpoints, default_weights, multivariate
    )


_logpdf_3_1_0 = _truncnorm.logpdf


def _logpdf_fixed(x, a, b, loc=0, scale=1):  # optuna/optuna#5110
    return _logpdf_3_1_0(x, a, b, loc, scale) - np.log(scale)


def show(name, obs, space, p, points):
    pe = _ParzenEstimator({k: np.asarray(v, dtype=float) for k, v in obs.items()}, space, p)
    print(f"// {name}")
    print("weights", repr(list(pe._weights)))
    for k in space:
        if pe._mus[k] is not None:
            print(k, "mus", repr(list(pe._mus[k])))
            print(k, "sigmas", repr(list(pe._sigmas[k])))
        else:
            print(k, "categorical_weights", repr(pe._categorical_weights[k].tolist()))
    pts = {
        k: np.asarray(v, dtype=int if isinstance(space[k], CategoricalDistribution) else float)
        for k, v in points.items()
    }
    print("log_pdf_3.1.0", repr(list(pe.log_pdf(pts))))
    _truncnorm.logpdf = _logpdf_fixed
    print("log_pdf", repr(list(pe.log_pdf(pts))))
    _truncnorm.logpdf = _logpdf_3_1_0


show(
    "float",
    {"x": [1.0, -2.0, 3.5, 0.2]},
    {"x": FloatDistribution(-5, 5)},
    params(),
    {"x": [0.0, 2.5, -4.9]},
)
show(
    "float endpoints",
    {"x": [1.0, -2.0, 3.5, 0.2]},
    {"x": FloatDistribution(-5, 5)},
    params(endpoints=True),
    {"x": [0.0]},
)
ramp = [float((i * 0.6180339887498949) % 1.0) for i in range(30)]
show("float ramp 30", {"x": ramp}, {"x": FloatDistribution(0, 1)}, params(), {"x": [0.5, 0.01]})
show("int", {"n": [3, 3, 7, 0]}, {"n": IntDistribution(0, 9)}, params(), {"n": [3, 5, 9]})
show(
    "log float",
    {"lr": [1e-3, 5e-3, 2e-2]},
    {"lr": FloatDistribution(1e-4, 1e-1, log=True)},
    params(),
    {"lr": [1e-3, 0.05]},
)
show(
    "log int",
    {"u": [4, 16, 100]},
    {"u": IntDistribution(1, 128, log=True)},
    params(),
    {"u": [8, 128]},
)
show(
    "step float",
    {"s": [0.25, 0.5, 0.5]},
    {"s": FloatDistribution(0, 1, step=0.25)},
    params(),
    {"s": [0.5, 1.0]},
)
show(
    "categorical",
    {"c": [0, 2, 2]},
    {"c": CategoricalDistribution(["a", "b", "c"])},
    params(),
    {"c": [0, 1, 2]},
)
show("empty", {"x": []}, {"x": FloatDistribution(-5, 5)}, params(prior=False), {"x": [1.0]})
show(
    "multivariate",
    {"x": [1.0, -2.0, 3.5, 0.2, 4.0], "n": [3, 3, 7, 0, 9]},
    {"x": FloatDistribution(-5, 5), "n": IntDistribution(0, 9)},
    params(multivariate=True),
    {"x": [0.0, 3.9], "n": [3, 8]},
)
print("gamma", [default_gamma(n) for n in (0, 1, 10, 11, 100, 249, 250, 251, 1000)])
print("weights30", repr(list(default_weights(30))))
