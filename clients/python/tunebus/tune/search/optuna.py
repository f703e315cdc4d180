"""Ray Tune 2.x's `ray.tune.search.optuna.OptunaSearch`: an Optuna study in the driver.

Optuna (Debian's python3-optuna; 3.1 on Debian 12) runs in the driver process, served to the
scheduler over the external searcher protocol (proto/PROTOCOL.md §7a) by tunebus._search_driver.
Importing this module never needs Optuna; constructing an OptunaSearch does (TuneError naming
python3-optuna otherwise, where Ray asserts "Optuna must be installed!").

A scheduler that restarts starts a new session and replays its journal; the driver then builds a
new study whose sampler is the same object (so its random stream goes on and the replayed trials'
first draws are not drawn again) and fixes each replayed trial's params with `enqueue_trial`
before asking it, so the study holds the trials and values it had.
"""

import logging
import math
import time
import warnings

from tunebus import _space
from tunebus.tune.search._util import (
    UNDEFINED_METRIC_MODE,
    UNDEFINED_SEARCH_SPACE,
    flatten,
    load_library,
    unflatten,
)
from tunebus.tune.search.searcher import DEFAULT_METRIC, Searcher

LOG = logging.getLogger("tunebus")

DEFINE_BY_RUN_WARN_THRESHOLD_S = 1
PROBE_TRIALS = 16  # define-by-run calls on a scratch study that find the keys it suggests


def _optuna():
    return load_library("optuna", "optuna", "OptunaSearch", debian="python3-optuna")


class _SuggestCaptor:
    """An optuna Trial whose suggest_* calls record the value under the parameter's name (what a
    define-by-run function suggests is the config, as Ray's _OptunaTrialSuggestCaptor)."""

    def __init__(self, trial):
        self.ot_trial = trial
        self.captured_values = {}

    def __getattr__(self, name):
        attr = getattr(self.ot_trial, name)
        if not (name.startswith("suggest_") and callable(attr)):
            return attr

        def captured(*args, **kwargs):
            value = attr(*args, **kwargs)
            self.captured_values[kwargs.get("name", args[0] if args else None)] = value
            return value

        return captured


def to_optuna(domain, ot):
    """The Optuna distribution of a tune domain, as Ray's OptunaSearch.convert_search_space:
    quantisation of log domains is dropped (the scheduler snaps the value to the domain),
    `randint`/`lograndint` upper bounds are exclusive, `qrandint`'s inclusive. ValueError for
    `randn`/`qrandn` and `sample_from`, which Optuna cannot sample."""
    d = ot.distributions
    name, args = domain.sampler, domain.args
    if name == "uniform":
        return d.FloatDistribution(args[0], args[1])
    if name == "quniform":
        return d.FloatDistribution(args[0], args[1], step=args[2])
    if name in ("loguniform", "qloguniform"):
        return d.FloatDistribution(args[0], args[1], log=True)
    if name == "randint":
        return d.IntDistribution(args[0], args[1] - 1)
    if name == "qrandint":
        return d.IntDistribution(args[0], args[1], step=args[2])
    if name in ("lograndint", "qlograndint"):
        return d.IntDistribution(args[0], args[1] - (1 if name == "lograndint" else 0), log=True)
    if name == "choice":
        return d.CategoricalDistribution(list(domain.categories))
    raise ValueError(
        "Optuna search does not support parameters of type `%s` with samplers of "
        "type `%s`" % (type(domain).__name__, name)
    )


def from_optuna(dist, ot):
    """The tune domain (the experiment file's sampler) of an Optuna distribution, or None when
    it has none (the key is then sent as any value)."""
    d = ot.distributions
    if isinstance(dist, d.FloatDistribution):
        if dist.log:
            return _space.loguniform(dist.low, dist.high)
        if dist.step:
            return _space.quniform(dist.low, dist.high, dist.step)
        return _space.uniform(dist.low, dist.high)
    if isinstance(dist, d.IntDistribution):
        if dist.log:
            return _space.lograndint(dist.low, dist.high + 1)
        if dist.step and dist.step > 1:
            return _space.qrandint(dist.low, dist.high, dist.step)
        return _space.randint(dist.low, dist.high + 1)
    if isinstance(dist, d.CategoricalDistribution):
        return _space.choice(list(dist.choices))
    return None


def _has_domains(space):
    for value in space.values():
        if isinstance(value, _space.Domain) or _space.is_grid(value):
            return True
        if isinstance(value, dict) and _has_domains(value):
            return True
    return False


def _same(point, params):
    """Whether `params` are `point`'s values (floats within 1e-9 relative: the scheduler snaps)."""
    for key, value in point.items():
        if key not in params:
            return False
        other = params[key]
        if isinstance(value, float) or isinstance(other, float):
            try:
                if not math.isclose(float(value), float(other), rel_tol=1e-9, abs_tol=1e-12):
                    return False
            except (TypeError, ValueError):
                return False
        elif value != other:
            return False
    return True


class OptunaSearch(Searcher):
    """Ray 2.7's OptunaSearch with Optuna 3.1 (Debian 12's python3-optuna).

    space: None (the Tuner's param_space, converted as Ray converts it: `to_optuna`), a dict of
        tune domains (nested dicts allowed), a dict of `optuna.distributions` (nested dicts or
        "a/b" names give nested configs), or a define-by-run function `fn(trial) -> dict | None`
        that calls `trial.suggest_*` (the values suggested, and the dict's constants, make the
        config; it should compute nothing).
    metric, mode: a result key and "min"/"max", or lists of them for many objectives (a study
        with `directions`; `on_trial_result` is then ignored, as in Ray). Left out, the
        TuneConfig's when the param space is the search space (Ray's set_search_properties).
    points_to_evaluate: configs (dicts) tried first, in order; partial ones are completed by the
        sampler. With `evaluated_rewards` (one value per point, or a list of values per point for
        many objectives) they are not run: the study is told them before its first suggestion.
    sampler: an `optuna.samplers.BaseSampler` (default TPESampler(seed=seed)). With several
        objectives an NSGAIISampler, MOTPESampler or TPESampler (and a space the scheduler can
        hold) makes the Tuner run the scheduler's own nsga2 / motpe instead of this study
        (`_tunebus_native`; docs/reference/python.md "Many objectives").
    seed: the default sampler's seed (ignored, with a warning, when `sampler` is given).
    study_name: the study's name (default "optuna"). storage: not supported (TuneError): the
        driver keeps the study in memory and rebuilds it from the scheduler's journal.

    Ends: a trial that ended with the metric is told COMPLETE with it, an errored one without it
    FAIL, any other without it PRUNED (Ray's mapping). Intermediate results are reported to the
    Optuna trial (`trial.report(value, training_iteration)`), so pruner-reading samplers see
    them; pruning itself is the trial scheduler's job.
    """

    def __init__(
        self,
        space=None,
        metric=None,
        mode=None,
        points_to_evaluate=None,
        sampler=None,
        study_name=None,
        storage=None,
        seed=None,
        evaluated_rewards=None,
    ):
        ot = _optuna()
        super().__init__(metric=metric, mode=mode)
        if storage is not None:
            from tunebus._errors import TuneError

            raise TuneError(
                "invalid_argument",
                "OptunaSearch: `storage` is not supported by "
                "tunebus: the driver keeps the study in memory and rebuilds it from "
                "the scheduler's journal after a restart",
            )
        self._domains = None  # the tune domains of `space`, when it is a dict of them
        if isinstance(space, dict) and space:
            if _has_domains(space):
                LOG.warning(
                    "You passed a `space` parameter to OptunaSearch that contained "
                    "unresolved search space definitions; it is converted to Optuna "
                    "distributions (the param_space of tune.Tuner() is the usual place)"
                )
                self._domains = space
                space = self.convert_search_space(space)
            else:
                space = flatten(space)
        elif space is not None and not callable(space) and space != {}:
            raise TypeError(
                "OptunaSearch: `space` must be a dict of optuna distributions or of "
                "tune domains, or a define-by-run function, got %r" % (space,)
            )
        self._space = space or None
        self._points_to_evaluate = [flatten(p) for p in points_to_evaluate or []]
        self._evaluated_rewards = evaluated_rewards
        if evaluated_rewards is not None and len(evaluated_rewards) != len(
            self._points_to_evaluate
        ):
            raise ValueError(
                "Dim of point %d and reward %d do not match"
                % (len(self._points_to_evaluate), len(evaluated_rewards))
            )
        self._study_name = study_name or "optuna"
        if sampler is not None and seed is not None:
            LOG.warning(
                "You passed an initialized sampler to `OptunaSearch`. The `seed` "
                "parameter has to be passed to the sampler directly and will be ignored."
            )
        elif sampler is not None and not isinstance(sampler, ot.samplers.BaseSampler):
            raise AssertionError(
                "You can only pass an instance of `optuna.samplers.BaseSampler` "
                "as a sampler to `OptunaSearcher`."
            )
        self._sampler = sampler
        self._seed = seed
        # The sampler the studies use: copies share it, so its random stream goes on.
        self._ot_sampler = sampler or ot.samplers.TPESampler(seed=seed)
        self._ot_study = None
        self._ot_trials = {}
        self._completed_trials = set()
        self._points = []  # points_to_evaluate not suggested yet
        if self._space:
            self._check_metric_mode()

    # ---- Ray's API --------------------------------------------------------------------------
    def set_search_properties(self, metric, mode, config, **spec):
        if self._space:
            return False
        self._space = self.convert_search_space(config) or None
        if metric:
            self._metric = metric
        if mode:
            self._mode = mode
        self._check_metric_mode()
        return True

    def suggest(self, trial_id):
        self._check_ready()
        study = self._study()
        if trial_id not in self._ot_trials:
            if self._points:
                study.enqueue_trial(self._points.pop(0))
            self._ot_trials[trial_id] = self._ask(study)
        trial = self._ot_trials[trial_id]
        params = self._define_by_run(trial) if callable(self._space) else trial.params
        return unflatten(params)

    def on_trial_result(self, trial_id, result):
        if isinstance(self._metric, list):
            return  # Optuna takes no intermediate values for many objectives
        if trial_id in self._completed_trials or trial_id not in self._ot_trials:
            return
        value, step = result.get(self._metric), result.get("training_iteration")
        if not _number(value) or not isinstance(step, int):
            return
        try:
            self._ot_trials[trial_id].report(float(value), step)
        except Exception as e:  # noqa: BLE001 - a step Optuna refuses (reported twice)
            LOG.debug("optuna refused the result of %s at %s: %s", trial_id, step, e)

    def on_trial_complete(self, trial_id, result=None, error=False):
        if trial_id in self._completed_trials:
            LOG.warning(
                "Received additional completion for trial %s, but it already finished.", trial_id
            )
            return
        trial = self._ot_trials.get(trial_id)
        if trial is None:
            return  # not suggested by this searcher
        ot = _optuna()
        value = None
        if result:
            if isinstance(self._metric, list):
                value = [result.get(m) for m in self._metric]
                if any(v is None for v in value):
                    value = None
            else:
                value = result.get(self._metric)
        state = ot.trial.TrialState.COMPLETE
        if value is None:
            state = ot.trial.TrialState.FAIL if error else ot.trial.TrialState.PRUNED
        try:
            self._study().tell(trial, value, state=state)
        except Exception as e:  # noqa: BLE001 - e.g. a NaN: Optuna refuses it, Ray logs it
            LOG.warning("%s", e)
        self._completed_trials.add(trial_id)

    def add_evaluated_point(
        self, parameters, value, error=False, pruned=False, intermediate_values=None
    ):
        self._check_ready()
        if callable(self._space):
            raise TypeError(
                "Define-by-run function passed in `space` argument is not yet "
                "supported when using `evaluated_rewards`. Please provide an "
                "`OptunaDistribution` dict or pass a Ray Tune search space to "
                "`tune.Tuner()`."
            )
        self._add_point(self._study(), parameters, value, error, pruned, intermediate_values)

    def save(self, checkpoint_path):
        import pickle

        with open(checkpoint_path, "wb") as f:
            pickle.dump(self.__dict__.copy(), f)

    def restore(self, checkpoint_path):
        import pickle

        with open(checkpoint_path, "rb") as f:
            self.__dict__.update(pickle.load(f))

    @staticmethod
    def convert_search_space(spec):
        """{"a/b": optuna distribution} for the tune domains of a (nested) param space; {} when
        it has none. ValueError for grid_search (Ray's message) and domains Optuna cannot
        sample."""
        ot = _optuna()
        out = {}

        def walk(node, prefix):
            for key, value in node.items():
                name = prefix + str(key)
                if _space.is_grid(value):
                    raise ValueError(
                        "Grid search parameters cannot be automatically converted "
                        "to an Optuna search space."
                    )
                if isinstance(value, _space.Domain):
                    out[name] = to_optuna(value, ot)
                elif isinstance(value, dict):
                    walk(value, name + "/")

        walk(spec or {}, "")
        return out

    # ---- the study --------------------------------------------------------------------------
    def _check_metric_mode(self):
        if self._metric is None and self._mode:
            if isinstance(self._mode, list):
                raise ValueError(
                    "If ``mode`` is a list (multi-objective optimization case), "
                    "``metric`` must be defined."
                )
            self._metric = DEFAULT_METRIC

    def _check_ready(self):
        if not self._space:
            raise RuntimeError(
                UNDEFINED_SEARCH_SPACE.format(cls=type(self).__name__, space="space")
            )
        if not self._metric or not self._mode:
            raise RuntimeError(
                UNDEFINED_METRIC_MODE.format(
                    cls=type(self).__name__, metric=self._metric, mode=self._mode
                )
            )

    def _study(self):
        if self._ot_study is None:
            ot = _optuna()
            if isinstance(self._mode, list):
                directions = {
                    "directions": ["minimize" if m == "min" else "maximize" for m in self._mode]
                }
            else:
                directions = {"direction": "minimize" if self._mode == "min" else "maximize"}
            self._ot_study = ot.create_study(
                storage=ot.storages.InMemoryStorage(),
                sampler=self._ot_sampler,
                pruner=ot.pruners.NopPruner(),
                study_name=self._study_name,
                **directions,
            )
            self._points = list(self._points_to_evaluate)
            if self._evaluated_rewards is not None:
                for point, reward in zip(self._points, self._evaluated_rewards):
                    self._add_point(self._ot_study, point, reward)
                self._points = []
        return self._ot_study

    def _ask(self, study):
        if callable(self._space):
            trial = study.ask()
            self._define_by_run(trial)
            return trial
        return study.ask(fixed_distributions=self._space)

    def _define_by_run(self, trial):
        captor = _SuggestCaptor(trial)
        start = time.time()
        ret = self._space(captor)
        took = time.time() - start
        if took > DEFINE_BY_RUN_WARN_THRESHOLD_S:
            warnings.warn(
                "Define-by-run function passed in the `space` argument took %s seconds "
                "to run. Ensure that actual computation, training takes place inside "
                "Tune's train functions or Trainables passed to `tune.Tuner()`." % took
            )
        if ret is not None:
            if not isinstance(ret, dict):
                raise TypeError(
                    "The return value of the define-by-run function passed in the "
                    "`space` argument should be either None or a `dict` with `str` "
                    "keys. Got %s." % type(ret)
                )
            if not all(isinstance(k, str) for k in ret):
                raise TypeError(
                    "At least one of the keys in the dict returned by the "
                    "define-by-run function passed in the `space` argument was not "
                    "a `str`."
                )
            return {**captor.captured_values, **ret}
        return captor.captured_values

    def _add_point(
        self, study, parameters, value, error=False, pruned=False, intermediate_values=None
    ):
        ot = _optuna()
        params = flatten(parameters)
        params = {k: v for k, v in params.items() if k in self._space}
        state = ot.trial.TrialState.COMPLETE
        if error:
            state = ot.trial.TrialState.FAIL
        elif pruned:
            state = ot.trial.TrialState.PRUNED
        values = list(value) if isinstance(value, (list, tuple)) else None
        study.add_trial(
            ot.trial.create_trial(
                state=state,
                value=None if values is not None else value,
                values=values,
                params=params,
                distributions={k: self._space[k] for k in params},
                intermediate_values=dict(enumerate(intermediate_values))
                if intermediate_values
                else None,
            )
        )

    # ---- several objectives: the scheduler's own searchers ---------------------------------
    def _tunebus_native(self, metric=None, mode=None):
        """The scheduler's searcher that does what this one would for several objectives, or
        None: NSGA2Search for an NSGAIISampler, MOTPESearch for a TPESampler (Optuna 3.x's TPE
        over several objectives is MOTPE) or an MOTPESampler (exact types: a subclass may
        change what they do), with the sampler's options. Only for several objectives (this
        searcher's `metric`/`mode` lists, else `metric`/`mode`, the TuneConfig's), a space the
        scheduler can hold (the Tuner's param space, tune domains or Optuna distributions it
        has a domain for; not a define-by-run function) and no evaluated_rewards. The result
        is (searcher, param space or None for the Tuner's)."""
        metrics = self._metric if isinstance(self._metric, list) else metric
        modes = self._mode if isinstance(self._mode, list) else mode
        if not isinstance(metrics, (list, tuple)) or not isinstance(modes, (list, tuple)):
            return None
        if callable(self._space) or self._evaluated_rewards is not None:
            return None
        ot = _optuna()
        space = None
        if self._domains is not None:
            space = unflatten(flatten(self._domains))
        elif isinstance(self._space, dict) and self._space:
            domains = {name: from_optuna(dist, ot) for name, dist in self._space.items()}
            if any(d is None for d in domains.values()):
                return None
            space = unflatten(domains)
        sampler = self._ot_sampler
        points = [unflatten(p) for p in self._points_to_evaluate]
        seed = self._seed if self._sampler is None else None
        from tunebus.tune.search._builtin import MOTPESearch, NSGA2Search

        params = {}
        if type(sampler) is ot.samplers.NSGAIISampler:
            params["population_size"] = sampler._population_size
            params["crossover_prob"] = sampler._crossover_prob
            params["swapping_prob"] = sampler._swapping_prob
            if sampler._mutation_prob is not None:
                params["mutation_prob"] = sampler._mutation_prob
            native = NSGA2Search
        elif type(sampler) in (ot.samplers.TPESampler, ot.samplers.MOTPESampler):
            params["n_startup_trials"] = sampler._n_startup_trials
            params["n_ei_candidates"] = sampler._n_ei_candidates
            native = MOTPESearch
        else:
            return None
        own = isinstance(self._metric, list)  # else the TuneConfig's lists, given there
        searcher = native(
            metric=list(metrics) if own else None,
            mode=list(modes) if own else None,
            points_to_evaluate=points or None,
            seed=seed,
            **params,
        )
        return searcher, space

    # ---- tunebus's hooks (tunebus._search_driver) -------------------------------------------
    def _tunebus_copy(self):
        """A copy without a study (it starts a new one) that shares the sampler."""
        import copy

        state = {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("_ot_sampler", "_ot_study", "_ot_trials", "_completed_trials", "_sampler")
        }
        clone = object.__new__(type(self))
        clone.__dict__.update(copy.deepcopy(state))
        clone._sampler = self._sampler
        clone._ot_sampler = self._ot_sampler
        clone._ot_study = None
        clone._ot_trials = {}
        clone._completed_trials = set()
        return clone

    def _tunebus_space(self):
        """The keys this searcher suggests: a dict space's own (as tune domains), or a
        define-by-run function's, found by calling it on PROBE_TRIALS trials of a scratch
        study with a seeded RandomSampler (so every branch it has is likely taken). Raises what
        Ray's first `suggest` raises without a space, metric or mode (RuntimeError), so fit()
        fails before the experiment starts."""
        self._check_ready()
        ot = _optuna()
        if not callable(self._space):
            out = {}
            if self._domains is not None:
                for name, domain in flatten(self._domains).items():
                    if isinstance(domain, _space.Domain):
                        out[tuple(name.split("/"))] = domain
                return out
            for name, dist in self._space.items():
                out[tuple(name.split("/"))] = from_optuna(dist, ot)
            return out
        verbosity = ot.logging.get_verbosity()
        ot.logging.set_verbosity(ot.logging.WARNING)
        try:
            scratch = ot.create_study(sampler=ot.samplers.RandomSampler(seed=0))
            names = set()
            for _ in range(PROBE_TRIALS):
                trial = scratch.ask()
                names.update(self._define_by_run(trial))
                scratch.tell(trial, state=ot.trial.TrialState.PRUNED)
        finally:
            ot.logging.set_verbosity(verbosity)
        return {tuple(name.split("/")): None for name in names}

    def _tunebus_adopt(self, trial_id, config):
        """Fixes the replayed trial's params (enqueue_trial, then ask), as the study had them."""
        study = self._study()
        flat = flatten(config)
        if callable(self._space):
            params = flat
        else:
            params = {k: flat[k] for k in self._space if k in flat}
        if self._points and _same(self._points[0], params):
            self._points.pop(0)  # the point this trial ran
        if trial_id not in self._ot_trials:
            study.enqueue_trial(params)
            self._ot_trials[trial_id] = self._ask(study)
        return self.suggest(trial_id)


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


__all__ = ["OptunaSearch"]
