"""Ray Tune 2.x's `Tuner`: a Tuner becomes an experiment file run by tunebus
(docs/reference/python.md).

`fit()`:
1. `build_experiment` translates the trainable, param space, TuneConfig and RunConfig into the
   experiment file's map (docs/reference/experiment-file.md); pure, so it is unit-tested without a
   suite.
2. `stage` writes a staging folder `<tmp>/tunebus-<name>-<random>/` holding a symlink to every
   top-level entry of the script's folder (without the results folder) and a real `_tunebus/`:
   `trainable.pkl` (cloudpickle: functions of `__main__` by value, importable ones by reference,
   so the script's top level never runs on a worker), `run_trainable.py` and a copy of this
   package. The experiment file, `_tunebus_experiment.yaml` (JSON, which YAML reads), is written
   there (entries of the script's folder named `_tunebus*` are not linked),
   so the trainable's command runs in the staging folder.
3. Python callables Ray runs in the driver (a callable stop or Stopper, PBT function mutations,
   `sample_from` functions, which the scheduler's variant generator asks for) are served by
   tunebus._driver on sockets of this process.
4. The staging folder is shipped as the working_dir and the file submitted over the control
   socket, then followed to its end (tunebus._submission, the steps of `tunectl run`: summary
   lines and the closing lines are the output; Ctrl-C interrupts the experiment resumably).
5. The results folder the scheduler names (`get_experiment`'s `results_dir`) becomes a
   ResultGrid; errored trials are in `ResultGrid.errors`, not raised.
"""

import copy
import datetime
import json
import os
import pickle
import re
import shutil
import sys
import tempfile
import threading

from tunebus import _deps, _space, _suite
from tunebus._configs import CheckpointConfig, FailureConfig, RunConfig, TuneConfig
from tunebus._errors import TuneError
from tunebus._reporters import AUTO_FILLED
from tunebus._control import ControlClient, EventSubscription
from tunebus._results import ResultGrid, control_exporter, control_history
from tunebus._trainable import Stopper, unwrap

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
STATE_FILE = "tunebus_tuner.json"
DRIVER_FILE = "tunebus_driver.pkl"  # DriverNeeds.save
EXPERIMENT_FILE = "_tunebus_experiment.yaml"
_NAME_RE = re.compile(r"[^A-Za-z0-9_.-]+")

RUN_TRAINABLE = '''"""Runs this folder's cloudpickled trainable (tunebus's trainable protocol)."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)                   # the tunebus package copied beside this file
sys.path.insert(1, os.path.dirname(here))  # the user's script folder (the working folder)
from tunebus import _runner  # noqa: E402

sys.exit(_runner.main(os.path.join(here, "trainable.pkl")))
'''


class DriverNeeds:
    """The callables of an experiment that run in the driver (tunebus._driver): a stopper, PBT
    function mutations, the `sample_from` functions of `param_space`, and the callbacks'
    dispatcher (tunebus._callbacks)."""

    def __init__(self, stopper=None, mutations=None, param_space=None, callbacks=None):
        """`param_space`: the Tuner's param space when it holds a `tune.sample_from`, else
        None."""
        self.stopper = stopper
        self.mutations = mutations or {}
        self.param_space = param_space
        self.search = None  # the searcher the driver serves: tunebus._search_driver.DriverSearch
        self.callbacks = callbacks
        self.endpoints = {}  # a resumed experiment's journaled {"driver", "search"} endpoints
        # ([metric, ...], [mode, ...]) of several objectives served by a searcher in the driver
        # (the experiment file then names the first); None otherwise.
        self.objectives = None

    @property
    def sample_from(self):
        """True when the scheduler asks the driver for `sample_from` values (`driver_sample`)."""
        return self.param_space is not None

    @property
    def on_result(self):
        """True when the driver must see every result (`driver.on_result`): a stopper, PBT
        function mutations or callbacks."""
        return self.stopper is not None or bool(self.mutations) or self.callbacks is not None

    @property
    def link(self):
        """True when the driver link is served (the experiment's `driver:` section)."""
        return self.on_result or self.sample_from or "driver" in self.endpoints

    def save(self, folder):
        """Pickles what a later `Tuner.restore` serves again (the stopper, PBT function
        mutations, the searcher, the param space holding sample_from functions) into
        `folder/DRIVER_FILE`; nothing when there is none."""
        if (
            self.stopper is None
            and not self.mutations
            and self.search is None
            and self.param_space is None
        ):
            return
        cloudpickle = _deps.load("cloudpickle")
        with open(os.path.join(folder, DRIVER_FILE), "wb") as f:
            cloudpickle.dump(
                {
                    "stopper": self.stopper,
                    "mutations": self.mutations,
                    "search": self.search,
                    "param_space": self.param_space,
                },
                f,
            )

    @classmethod
    def restored(cls, folder, exp):
        """The needs of experiment `exp` resumed from the results folder `folder`: the pickled
        callables, served again at the endpoints the experiment's journaled file names (the
        scheduler reconnects there: PROTOCOL.md §7a, §7b)."""
        needs = cls()
        file = os.path.join(folder, DRIVER_FILE)
        if os.path.exists(file):
            _deps.load("cloudpickle")
            with open(file, "rb") as f:
                saved = pickle.load(f)
            needs.stopper, needs.mutations = saved["stopper"], saved["mutations"] or {}
            needs.search = saved["search"]
            needs.param_space = saved.get("param_space")
        if (exp.get("driver") or {}).get("endpoint"):
            needs.endpoints["driver"] = exp["driver"]["endpoint"]
        search = exp.get("search") or {}
        if needs.search is not None and search.get("type") == "external" and search.get("endpoint"):
            needs.endpoints["search"] = search["endpoint"]
        return needs


def default_name(trainable):
    base = getattr(unwrap(trainable).trainable, "__name__", "trainable")
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    return _NAME_RE.sub("_", "%s_%s" % (base, stamp))


def default_storage_path():
    return os.environ.get("TUNEBUS_STORAGE_PATH") or os.path.expanduser("~/tunebus_results")


def python_command():
    return os.environ.get("TUNEBUS_PYTHON") or sys.executable


def _inherit(holder, metric, mode, what):
    holder = copy.copy(holder)
    if not holder.set_search_properties(metric, mode, config={}):
        raise ValueError(
            "You passed a `metric` or `mode` argument to `tune.TuneConfig()`, but the %s you are "
            "using was already instantiated with their own `metric` and `mode` parameters. Either "
            "remove the arguments from tune.TuneConfig() or from your %s." % (what, what)
        )
    return holder


def objectives_of(metric, mode, search_alg=None):
    """The experiment's metric and mode: TuneConfig's, else the searcher's lists of several
    objectives (NSGA2Search, MOTPESearch, an OptunaSearch of several). Strings for one
    objective; lists of equal length >= 2 (distinct metrics, each mode min or max) for several,
    Ray's and Optuna's list form. ValueError for anything else, and for lists in both places
    (Ray's "given twice")."""
    own_metric = getattr(search_alg, "_metric", None)
    own_mode = getattr(search_alg, "_mode", None)
    if isinstance(own_metric, list) and isinstance(own_mode, list):
        if metric is not None or mode is not None:
            raise ValueError(
                "You passed a `metric` or `mode` argument to `tune.TuneConfig()`, but the "
                "searcher you are using was already instantiated with their own `metric` and "
                "`mode` parameters. Either remove the arguments from tune.TuneConfig() or from "
                "your searcher."
            )
        metric, mode = own_metric, own_mode
    if not isinstance(metric, (list, tuple)) and not isinstance(mode, (list, tuple)):
        if mode is not None and mode not in ("min", "max"):
            raise ValueError("TuneConfig.mode must be 'min' or 'max', got %r" % (mode,))
        return metric, mode
    if not isinstance(metric, (list, tuple)) or not isinstance(mode, (list, tuple)):
        raise ValueError(
            "TuneConfig: several objectives need metric and mode lists of equal length, got "
            "metric=%r, mode=%r" % (metric, mode)
        )
    if len(metric) != len(mode) or len(metric) < 2:
        raise ValueError(
            "TuneConfig: metric and mode must be lists of equal length >= 2, got %d metrics and "
            "%d modes" % (len(metric), len(mode))
        )
    for m in mode:
        if m not in ("min", "max"):
            raise ValueError("TuneConfig.mode: each entry must be 'min' or 'max', got %r" % (m,))
    if len(set(metric)) != len(metric) or not all(isinstance(m, str) and m for m in metric):
        raise ValueError("TuneConfig.metric: distinct result keys, got %r" % (list(metric),))
    return list(metric), list(mode)


def build_experiment(trainable, param_space=None, tune_config=None, run_config=None, name=None):
    """The experiment file's map for a Tuner, and its DriverNeeds. Raises TuneError
    invalid_argument for what the file cannot say (naming the field), ValueError for Ray's own
    argument errors (metric/mode given twice)."""
    spec = unwrap(trainable)
    tc = tune_config or TuneConfig()
    rc = run_config or RunConfig()
    name = name or rc.name or default_name(spec)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise TuneError("invalid_argument", "RunConfig.name %r: use [A-Za-z0-9_.-]+" % name)
    search_alg, searcher_space = tc.search_alg, None
    native = getattr(search_alg, "_tunebus_native", None)
    if native is not None:  # OptunaSearch of several objectives: the scheduler's nsga2 / motpe
        made = native(tc.metric, tc.mode)
        if made is not None:
            search_alg, searcher_space = made
    metric, mode = objectives_of(tc.metric, tc.mode, search_alg)
    many = isinstance(metric, list)
    try:
        space = _space.to_spec(param_space or {})
        if searcher_space:
            space.update(_space.to_spec(searcher_space))
    except ValueError as e:
        raise TuneError("invalid_argument", str(e)) from None
    exp = {
        "name": name,
        "trainable": {
            "command": [python_command(), "_tunebus/run_trainable.py"],
            "env": {"TB_EXPERIMENT_NAME": name},
        },
        "param_space": space,
        "num_samples": tc.num_samples,
        "results_dir": os.path.abspath(
            os.path.expanduser(rc.storage_path or rc.local_dir or default_storage_path())
        ),
    }
    if metric is not None:
        exp["metric"] = metric
    if mode is not None:
        exp["mode"] = mode
    needs = DriverNeeds(param_space=param_space if _space.has_function(param_space or {}) else None)
    stop = {}
    if isinstance(rc.stop, dict):
        stop.update(rc.stop)
    elif rc.stop is not None:
        if not (callable(rc.stop) or isinstance(rc.stop, Stopper)):
            raise TuneError(
                "invalid_argument",
                "RunConfig.stop: a dict, a callable or a " "tune.Stopper, got %r" % (rc.stop,),
            )
        needs.stopper = rc.stop
    if tc.time_budget_s:
        stop["time_budget_s"] = tc.time_budget_s
    if stop:
        exp["stop"] = stop
    if spec.resources:
        exp["resources_per_trial"] = spec.resources
    if tc.max_concurrent_trials:
        exp["max_concurrent_trials"] = tc.max_concurrent_trials
    fc = rc.failure_config or FailureConfig()
    if fc.max_failures:
        exp["max_failures"] = fc.max_failures
    if fc.fail_fast:
        exp["fail_fast"] = fc.fail_fast
    cc = rc.checkpoint_config or CheckpointConfig()
    if cc.checkpoint_frequency:
        exp["checkpoint_freq"] = cc.checkpoint_frequency
    if cc.checkpoint_at_end is not None:
        exp["checkpoint_at_end"] = bool(cc.checkpoint_at_end)
    if cc.num_to_keep:
        exp["keep_checkpoints_num"] = cc.num_to_keep
    if cc.checkpoint_score_attribute:
        attr = cc.checkpoint_score_attribute
        exp["checkpoint_score_attr"] = (
            ("min-" + attr) if cc.checkpoint_score_order == "min" else attr
        )
    if tc.scheduler is not None:
        # Several objectives: the scheduler compares its own metric, one of them (Ray's rule;
        # the scheduler refuses to guess which, docs/reference/search.md "Many objectives").
        scheduler = _inherit(
            tc.scheduler, None if many else tc.metric, None if many else tc.mode, "scheduler"
        )
        exp["scheduler"] = scheduler.to_spec()
        needs.mutations = scheduler.driver_mutations()
    if search_alg is not None:
        if needs.sample_from and getattr(search_alg, "type", "") != "random":
            raise TuneError(
                "invalid_argument",
                "tune.sample_from is drawn by the scheduler's variant generator "
                "(BasicVariantGenerator, the default); it cannot be combined with search_alg %s"
                % type(search_alg).__name__,
            )
        from tunebus import _search_driver  # imports tunebus.tune.search: not at module load

        if _search_driver.runs_in_driver(search_alg):
            # Ray runs it in the driver: so does tunebus, over §7a (tunebus._search_driver).
            needs.search = _search_driver.DriverSearch(
                search_alg,
                param_space,
                tc.metric,
                tc.mode,
                {"stop": rc.stop, "num_samples": tc.num_samples, "time_budget_s": tc.time_budget_s},
            )
            if many:
                # The external searcher (§7a) serves one metric: the driver's searcher sees every
                # objective in its results, the scheduler orders trials by the first, and the
                # ResultGrid computes the Pareto front of them all (needs.objectives).
                needs.objectives = (metric, mode)
                exp["metric"], exp["mode"] = metric[0], mode[0]
            exp = needs.search.apply(exp)
        else:
            searcher = _inherit(
                search_alg, None if many else tc.metric, None if many else tc.mode, "searcher"
            )
            exp["search"] = searcher.to_spec()
            if searcher.seed is not None:
                exp["seed"] = searcher.seed
    return exp, needs


def _script_folder():
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if (
        not path
        or getattr(main, "__spec__", None) is not None
        or "site-packages" in path
        or "dist-packages" in path
    ):
        return os.getcwd()  # interactive, `python -m`, or a tool's entry point (pytest)
    return os.path.dirname(os.path.abspath(path))


def stage(exp, spec, results_dir, restore_from=None):
    """Writes the staging folder (see the module doc) and the experiment file; returns the file's
    path. `restore_from`: a checkpoint folder shipped as `_tunebus/restore/`, which an attempt
    without a stored checkpoint restores from (tune.run's `restore`)."""
    cloudpickle = _deps.load("cloudpickle")
    folder = tempfile.mkdtemp(prefix="tunebus-%s-" % exp["name"])
    source = os.environ.get("TUNEBUS_WORKING_DIR") or _script_folder()
    results = os.path.realpath(results_dir)
    for entry in sorted(os.listdir(source)):
        full = os.path.join(source, entry)
        real = os.path.realpath(full)
        if (
            entry.startswith("_tunebus")
            or results == real
            or results.startswith(real + os.sep)
            or real == folder
            or folder.startswith(real + os.sep)
        ):
            continue  # the results folder, and the staging folder itself (a script in /tmp)
        os.symlink(full, os.path.join(folder, entry))
    inner = os.path.join(folder, "_tunebus")
    os.mkdir(inner)
    with open(os.path.join(inner, "trainable.pkl"), "wb") as f:
        cloudpickle.dump(spec, f)
    with open(os.path.join(inner, "run_trainable.py"), "w") as f:
        f.write(RUN_TRAINABLE)
    shutil.copytree(
        PACKAGE_DIR,
        os.path.join(inner, "tunebus"),
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    if restore_from is not None:
        shutil.copytree(restore_from, os.path.join(inner, "restore"), symlinks=True)
    path = os.path.join(folder, EXPERIMENT_FILE)
    with open(path, "x") as f:  # never through a symlink into the user's folder
        f.write("# written by tunebus.tune.Tuner (JSON is YAML)\n")
        json.dump(exp, f, indent=2, sort_keys=False)
        f.write("\n")
    return path


class Tuner:
    """Ray Tune 2.x's Tuner. `trainable`: a function `fn(config)`, a `tune.Trainable` subclass,
    or either wrapped by `tune.with_parameters` / `tune.with_resources`. Every keyword is
    optional. `fit()` returns a ResultGrid; errored trials do not raise (see `errors`), an
    invalid or refused experiment raises TuneError with the scheduler's code and message, Ctrl-C
    raises KeyboardInterrupt after printing how to resume."""

    def __init__(
        self,
        trainable=None,
        *,
        param_space=None,
        tune_config=None,
        run_config=None,
        _restore_name=None,
    ):
        if trainable is None:
            raise TypeError("Tuner needs a trainable")
        self._trainable = unwrap(trainable)
        self._param_space = param_space
        self._tune_config = tune_config or TuneConfig()
        self._run_config = run_config or RunConfig()
        self._name = _restore_name or self._run_config.name
        self._results = None
        self._results_dir = None

    @classmethod
    def restore(
        cls,
        path,
        trainable,
        *,
        param_space=None,
        resume_unfinished=True,
        resume_errored=False,
        restart_errored=False,
        **_ignored,
    ):
        """Ray's `Tuner.restore(path, trainable)`: continues the experiment whose results folder
        is `path`, with the same settings (read from its `tunebus_tuner.json`) and `trainable`
        (re-pickled). The suite must hold the experiment's journal: an embedded suite on the
        same storage path (its `_tunebus_store`, or the same TUNEBUS_DATA_DIR), or a connected
        suite (TUNEBUS_ADDRESS / tunebus.init)."""
        state_file = os.path.join(path, STATE_FILE)
        if not os.path.exists(state_file):
            raise TuneError(
                "not_found", "%s has no %s: not a results folder of a Tuner" % (path, STATE_FILE)
            )
        with open(state_file) as f:
            state = json.load(f)
        tuner = cls(trainable, param_space=param_space, _restore_name=state["name"])
        tuner._restored = state
        tuner._results_dir = os.path.abspath(path)
        return tuner

    def get_results(self):
        """The ResultGrid of the last `fit()`, or of a restored Tuner's results folder as it is
        (Ray's `Tuner.restore(path, fn).get_results()`: statuses and checkpoints come from the
        suite holding its journal, the embedded one on its storage path started if needed)."""
        if self._results is not None:
            return self._results
        restored = getattr(self, "_restored", None)
        if not restored:
            raise RuntimeError("get_results() before fit()")
        exp = restored["experiment"]
        endpoint, _ = _suite.endpoint(exp["results_dir"])
        client = ControlClient(endpoint)
        summary = client.get_experiment(exp["name"])
        trials = client.list_trials(exp["name"])
        metric, mode = restored.get("objectives") or (exp.get("metric"), exp.get("mode"))
        self._results = ResultGrid.from_suite(
            endpoint,
            summary.get("journal") or exp["name"],
            trials,
            metric,
            mode,
            self._results_dir,
        )
        return self._results

    def fit(self):
        """Runs the experiment to its end and returns its ResultGrid, as Ray 2.x's
        `Tuner.fit()`.

        Submits the experiment to the suite `tunebus.init` chose (TUNEBUS_ADDRESS, else the
        embedded `tunectl up` this process starts on first use), ships the trainable
        (cloudpickled) and the working_dir, and prints progress per RunConfig.verbose. A
        restored Tuner continues its experiment; a new one starts a new run, also beside an
        earlier run of the same name.

        Returns:
            ResultGrid: one Result per trial. Trials that ended ERROR do not raise: see
            `ResultGrid.errors` (Ray 2.x's behaviour).

        Raises:
            TuneError: the suite refused the experiment (an invalid param space or config,
                with the scheduler's code and message) or cannot be reached.
            KeyboardInterrupt: Ctrl-C stopped following; the message says how to resume
                (`Tuner.restore(path, trainable).fit()`).
            Exception: a callback's, a searcher's or a sample_from function's exception,
                once the suite has stopped the experiment (as Ray's `tune.run`).
        """
        from tunebus import _driver

        restored = getattr(self, "_restored", None)
        if restored:
            exp = restored["experiment"]
            needs = DriverNeeds.restored(self._results_dir, exp)
            needs.objectives = restored.get("objectives")
            if _space.has_function(self._param_space or {}):
                needs.param_space = self._param_space  # Ray's Tuner.restore(param_space=...)
            rc, tc = self._run_config, self._tune_config
            exp["trainable"]["command"][0] = python_command()
        else:
            exp, needs = build_experiment(
                self._trainable, self._param_space, self._tune_config, self._run_config, self._name
            )
            rc, tc = self._run_config, self._tune_config
        self._name = exp["name"]
        endpoint, embedded = _suite.endpoint(exp["results_dir"])
        needs.callbacks = _callbacks_for(rc, tc, exp, self._trainable.__name__)
        client = ControlClient(endpoint)
        links = []
        path = None
        try:
            if needs.link or needs.search is not None:
                host = "127.0.0.1" if embedded else _driver.local_address_for(endpoint)
                link = _driver.DriverLink(
                    exp,
                    needs,
                    host,
                    curve=_suite.secured(endpoint),
                    events_endpoint=_suite.events_endpoint(endpoint),
                )
                links.append(link)
                if not restored:  # a resumed experiment keeps its journaled endpoints
                    exp = link.amend(exp)
            path = stage(
                exp, self._trainable, exp["results_dir"], getattr(self, "_restore_from", None)
            )
            if getattr(self, "_rerun_errored", ""):  # tune.run(resume="ERRORED_ONLY")
                client.resume(exp["name"], rerun_errored=self._rerun_errored)
            verbose = 0 if rc.progress_reporter is not None else rc.verbose
            final = self._submit_and_follow(
                client, endpoint, path, exp, verbose, resume=bool(restored)
            )
        finally:
            for link in links:
                link.close()
            if path is not None:  # shipped at submission: the store holds its archive now
                shutil.rmtree(os.path.dirname(path), ignore_errors=True)
        summary = client.get_experiment(exp["name"])
        results_dir = summary.get("results_dir") or os.path.join(exp["results_dir"], exp["name"])
        self._results_dir = results_dir
        if os.path.isdir(results_dir):
            with open(os.path.join(results_dir, STATE_FILE), "w") as f:
                state = {"name": exp["name"], "endpoint": endpoint, "experiment": exp}
                if needs.objectives is not None:
                    state["objectives"] = list(needs.objectives)
                json.dump(state, f, indent=2)
            needs.save(results_dir)
        if final is None or final.get("status") == "INTERRUPTED":
            hint = (
                getattr(self, "_resume_hint", None)
                or "tune.Tuner.restore({path!r}, trainable).fit()"
            )
            hint = hint.format(name=exp["name"], path=results_dir)
            print("tunebus: interrupted; resume with %s" % hint, file=sys.stderr)
            raise KeyboardInterrupt
        trials = client.list_trials(exp["name"])
        exporter = control_exporter(endpoint, summary.get("journal") or exp["name"])
        if needs.callbacks is not None:
            needs.callbacks.exporter = exporter
            needs.callbacks.finish(trials)
            if needs.callbacks.error is not None:
                raise needs.callbacks.error[0]
        if needs.search is not None and needs.search.error is not None:
            raise needs.search.error  # Ray's tune.run raises a searcher's exception too
        for link in links:
            if link.error is not None:
                raise link.error  # a sample_from function's, as Ray's variant generator's
        self._trial_views, self._exporter = trials, exporter
        self._results = ResultGrid.from_trials(
            trials,
            control_history(endpoint, summary.get("journal") or exp["name"]),
            *_grid_objectives(exp, needs, tc),
            exporter,
            results_dir,
        )
        return self._results

    @staticmethod
    def _submit_and_follow(client, endpoint, path, exp, verbose, resume):
        """Submits the experiment file `path` (tunebus._submission) and follows it to its end;
        returns its final summary, or None when a second Ctrl-C stopped following. `resume`:
        continue the unfinished experiment of that name (a restored Tuner); else a new run, as
        Ray's `Tuner.fit()` of a new Tuner is, also beside an interrupted run of the same name.
        verbose >= 2 also prints one line per result (ResultPrinter)."""
        from tunebus import _submission

        printer = ResultPrinter(_suite.events_endpoint(endpoint)) if verbose >= 2 else None
        try:
            followed = _submission.submit(client, path, exp, resume, verbose)
            return _submission.follow(client, followed, verbose)
        finally:
            if printer is not None:
                printer.close()


def _grid_objectives(exp, needs, tc):
    """(metric, mode) for the ResultGrid: the objectives' lists of a multi-objective experiment
    (also one whose searcher runs in the driver), else the experiment's metric and mode."""
    if needs.objectives is not None:
        return needs.objectives
    return exp.get("metric", tc.metric), exp.get("mode", tc.mode)


def _callbacks_for(rc, tc, exp, trainable_name):
    """The CallbackDispatcher of RunConfig's `callbacks` and `progress_reporter`, set up (Ray's
    `Callback.setup` before the first trial), or None when there are neither."""
    from tunebus._callbacks import CallbackDispatcher
    from tunebus._reporters import ReporterCallback

    callbacks = list(rc.callbacks or [])
    if not callbacks and rc.progress_reporter is None:
        return None
    reporters = []
    if rc.progress_reporter is not None:
        scheduler = (exp.get("scheduler") or {}).get("type", "fifo")
        sys_info = [
            "Using %s scheduling algorithm." % _SCHEDULER_NAMES.get(scheduler, scheduler),
            "Result logdir: %s" % os.path.join(exp["results_dir"], exp["name"]),
        ]
        reporters.append(
            ReporterCallback(
                rc.progress_reporter,
                None if isinstance(exp.get("metric"), list) else exp.get("metric"),
                None if isinstance(exp.get("mode"), list) else exp.get("mode"),
                sys_info,
            )
        )
    dispatcher = CallbackDispatcher(callbacks, reporters, trainable_name=trainable_name)
    total = exp.get("num_samples", 1)
    dispatcher.setup(
        stop=rc.stop,
        num_samples=tc.num_samples,
        total_num_samples=total * _grid_size(exp.get("param_space")) if total >= 0 else -1,
    )
    return dispatcher


def _grid_size(space):
    """Grid points of a param space: the product of its grid_search lengths."""
    if _space.is_grid(space):
        return len(space["grid_search"])
    size = 1
    if isinstance(space, dict):
        for value in space.values():
            size *= _grid_size(value)
    return size


_SCHEDULER_NAMES = {
    "fifo": "FIFO",
    "asha": "AsyncHyperBand",
    "hyperband": "HyperBand",
    "hyperband_bohb": "HyperBandForBOHB",
    "median_stopping": "MedianStoppingRule",
    "pbt": "PopulationBasedTraining",
}


class ResultPrinter:
    """verbose=2: one line per result, from the scheduler's event stream (PROTOCOL.md §6,
    `trial_result` events), printed by a daemon thread until close()."""

    def __init__(self, events_endpoint):
        self._stopping = False
        self._thread = None
        if events_endpoint:
            self._thread = threading.Thread(target=self._run, args=(events_endpoint,), daemon=True)
            self._thread.start()

    def _run(self, events_endpoint):
        try:
            events = EventSubscription(events_endpoint, (b"trial",))
        except TuneError as e:
            print("tunebus: no per-result lines: %s" % e.message, file=sys.stderr)
            return
        try:
            while not self._stopping:
                if not events.socket.poll(200):
                    continue
                event = events.receive()
                if event is None or event.get("event") != "trial_result":
                    continue
                result = event["body"].get("last_result") or {}
                shown = {k: v for k, v in result.items() if k not in AUTO_FILLED}
                print(
                    "%s iter %s: %s"
                    % (
                        event.get("trial_id"),
                        result.get("training_iteration"),
                        json.dumps(shown, sort_keys=True),
                    ),
                    flush=True,
                )
        finally:
            events.close()

    def close(self):
        self._stopping = True
        if self._thread is not None:
            self._thread.join(2)
