"""Ray Tune 2.x's `ray.tune.search.hyperopt.HyperOptSearch`: HyperOpt's TPE in the driver.

Needs hyperopt (`pip install hyperopt`; Debian does not package it): constructing the searcher
without it raises TuneError naming it and tunebus's alternatives; importing this module does not
need it (as in Ray). Written against hyperopt 0.2.7's API; tunebus's tests drive it with a stand-in
module, as hyperopt cannot be installed on the machines it is built on.

How it asks hyperopt for one point at a time (hyperopt has no ask/tell API): `fmin` over the
searcher's `Trials` with `max_evals` one more than the trials it holds and an objective that
records the params and raises, so fmin stops after drawing them; that trial's document stays in
`Trials` (errored, which hyperopt's TPE ignores) until the trial ends, when it becomes DONE with
`{"loss": ±value, "status": "ok"}`. Points not asked (points_to_evaluate with
evaluated_rewards, replayed trials) are inserted as DONE documents of their own.
"""

import functools
import logging
import math

from tunebus.tune.search._library import LibrarySearcher


class _Drawn(Exception):
    """Raised by the objective once hyperopt drew a point: ends that fmin call."""


class HyperOptSearch(LibrarySearcher):
    """Ray 2.7's HyperOptSearch(space, metric, mode, points_to_evaluate, n_initial_points=20,
    random_state_seed=None, gamma=0.25). `space`: a dict of tune domains, or None for the
    Tuner's param space (hyperopt's own `hp.*` spaces are refused with TypeError). The loss is
    the metric, negated for mode "max"."""

    LIBRARY = PIP = "hyperopt"

    def __init__(
        self,
        space=None,
        metric=None,
        mode=None,
        points_to_evaluate=None,
        n_initial_points=20,
        random_state_seed=None,
        gamma=0.25,
    ):
        super().__init__(space, metric, mode, points_to_evaluate, None, random_state_seed)
        self._n_initial_points = n_initial_points
        self._gamma = gamma

    def _setup(self, space):
        hpo = self._lib
        self._hp_space = {name: _to_hp(hpo, name, domain) for name, domain in space.items()}
        self._categories = {
            name: list(d.categories) for name, d in space.items() if d.sampler == "choice"
        }
        self._trials = hpo.Trials()
        self._algo = functools.partial(
            hpo.tpe.suggest, n_startup_jobs=self._n_initial_points, gamma=self._gamma
        )
        import numpy

        self._rstate = numpy.random.default_rng(self._seed)

    def _ask(self):
        drawn = []

        def objective(params):
            drawn.append(params)
            raise _Drawn()

        log = logging.getLogger("hyperopt")
        level = log.level
        log.setLevel(logging.CRITICAL)  # fmin logs the objective's exception as a job error
        try:
            self._lib.fmin(
                objective,
                self._hp_space,
                algo=self._algo,
                max_evals=len(self._trials.trials) + 1,
                trials=self._trials,
                rstate=self._rstate,
                catch_eval_exceptions=False,
                show_progressbar=False,
                allow_trials_fmin=False,
            )
        except _Drawn:
            pass
        finally:
            log.setLevel(level)
        doc = self._trials._dynamic_trials[-1]
        return doc, dict(drawn[0])

    def _tell(self, doc, value):
        doc["refresh_time"] = self._lib.utils.coarse_utcnow()
        if value is not None:
            doc["state"] = self._lib.base.JOB_STATE_DONE
            doc["result"] = {"loss": self._sign(value), "status": "ok"}
        self._trials.refresh()

    def _observe(self, params, value):
        base = self._lib.base
        tid = self._trials.new_trial_ids(1)[0]
        vals = {}
        for name in self._hp_space:
            if name not in params:
                continue
            v = params[name]
            if name in self._categories:
                v = self._categories[name].index(v)
            vals[name] = [v]
        doc = {
            "state": base.JOB_STATE_DONE,
            "tid": tid,
            "spec": None,
            "result": {"loss": self._sign(value), "status": "ok"},
            "misc": {
                "tid": tid,
                "cmd": ("domain_attachment", "FMinIter_Domain"),
                "workdir": None,
                "idxs": {k: [tid] for k in vals},
                "vals": vals,
            },
            "exp_key": None,
            "owner": None,
            "version": 0,
            "book_time": None,
            "refresh_time": None,
        }
        self._trials.insert_trial_docs([doc])
        self._trials.refresh()


def _to_hp(hpo, name, domain):
    """The hyperopt expression of a tune domain, as Ray's HyperOptSearch.convert_search_space."""
    hp, args, sampler = hpo.hp, domain.args, domain.sampler
    integer = hpo.pyll.scope.int
    if sampler == "uniform":
        return hp.uniform(name, args[0], args[1])
    if sampler == "quniform":
        return hp.quniform(name, args[0], args[1], args[2])
    if sampler == "loguniform":
        return hp.loguniform(name, math.log(args[0]), math.log(args[1]))
    if sampler == "qloguniform":
        return hp.qloguniform(name, math.log(args[0]), math.log(args[1]), args[2])
    if sampler == "randn":
        return hp.normal(name, args[0], args[1])
    if sampler == "qrandn":
        return hp.qnormal(name, args[0], args[1], args[2])
    if sampler == "randint":
        return hp.randint(name, args[0], args[1])
    if sampler == "qrandint":
        return integer(hp.quniform(name, args[0], args[1], args[2]))
    if sampler == "lograndint":
        return integer(hp.qloguniform(name, math.log(args[0]), math.log(args[1] - 1), 1))
    if sampler == "qlograndint":
        return integer(hp.qloguniform(name, math.log(args[0]), math.log(args[1]), args[2]))
    if sampler == "choice":
        return hp.choice(name, list(domain.categories))
    raise ValueError(
        "HyperOpt does not support parameters of type `%s` with samplers of type "
        "`%s`" % (type(domain).__name__, sampler)
    )


__all__ = ["HyperOptSearch"]
