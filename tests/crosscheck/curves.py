"""Deterministic synthetic learning curves and report orders for the Optuna cross-check
(tests/crosscheck/optuna_crosscheck.py, docs/explanation/schedulers-optuna-crosscheck.md).

A curve is a list of values reported at steps 1..T (step = training_iteration). An order is a
list of trial indices: entry k says which trial reports its next step k-th. Everything is drawn
from random.Random(seed), so a seed gives the same curves and order on every machine.
"""
import math


def saturating(rng, n, steps, noise=0.02):
    """n noisy saturating curves, maximised (accuracy-like): level * (1 - e^(-t/tau)) + noise, with
    level ~ U(0.5, 1), tau ~ U(1, steps/3) per trial and Gaussian noise of sd `noise` per report.
    Their rankings cross (fast starters are not always the best), as real curves do."""
    curves = []
    for _ in range(n):
        level, tau = rng.uniform(0.5, 1.0), rng.uniform(1.0, steps / 3)
        curves.append(
            [level * (1 - math.exp(-t / tau)) + rng.gauss(0, noise) for t in range(1, steps + 1)]
        )
    return curves


def extremal_levels(rng, n):
    """n distinct levels 1..n in an order where each one is a new maximum or a new minimum of those
    before it (a random walk outward from a random middle rank). Fed in this order to a rung or a
    median, every decision is clear-cut: a new maximum passes any top-1/eta or median cut, a new
    minimum fails it, so rules that differ only in how they cut agree (see the docs)."""
    lo = hi = rng.randint(1, n)
    out = [lo]
    while len(out) < n:
        if hi < n and (lo == 1 or rng.random() < 0.5):
            hi += 1
            out.append(hi)
        else:
            lo -= 1
            out.append(lo)
    return out


def rung_extremal(rng, n, steps, milestones, gap=0.05):
    """Noisy saturating curves (saturating(), shape f(t) = 1 - e^(-t/4)) except at the rung
    milestones (steps), where trial i reports (0.2 + gap * L_r[i]) * f(m_r), L_r an
    extremal_levels() permutation drawn afresh for each rung r. Successive halving looks only at
    the values at milestones; if trials reach each milestone in index order, the arrivals at every
    rung are extremal (the survivors of a rung are a subsequence of an extremal sequence, which is
    extremal too), and rankings change from rung to rung, so trials stop at every rung."""
    out = saturating(rng, n, steps)
    for m in milestones:
        if m > steps:
            continue
        for i, level in enumerate(extremal_levels(rng, n)):
            out[i][m - 1] = (0.2 + gap * level) * (1 - math.exp(-m / 4))
    return out


def converged_by(rng, levels, steps, grace, gap=0.05):
    """Curves that ramp up during the first `grace` steps and are flat from step `grace` on at
    0.2 + gap*level: each trial's running mean over [grace, t], its value at t and its best so far
    are all the same number (where the median stopping rule of Ray Tune and Optuna's coincide)."""
    out = []
    for k in levels:
        top = 0.2 + gap * k
        out.append(
            [
                top * (t / grace) * rng.uniform(0.5, 1.0) if t < grace else top
                for t in range(1, steps + 1)
            ]
        )
    return out


def as_minimised(curves):
    """The same curves as a loss to minimise: 1 - value."""
    return [[1 - v for v in c] for c in curves]


def round_robin(n, steps):
    """Every trial reports step 1, then every trial step 2, ... (synchronous workers)."""
    return [i for _ in range(steps) for i in range(n)]


def sequential(n, steps):
    """Trial 0 reports all its steps, then trial 1, ... (one worker)."""
    return [i for i in range(n) for _ in range(steps)]


def staggered(n, steps, delay=3):
    """Trial i starts `delay` ticks after trial i-1 and reports one step per tick: asynchronous, but
    trials reach every step in index order."""
    events = sorted((i * delay + t, i) for i in range(n) for t in range(steps))
    return [i for _, i in events]


def asynchronous(rng, n, steps, workers=4):
    """`workers` workers, each trial's step takes U(0.5, 2) time units for that trial; a trial
    starts when a worker frees up (in index order). Trials overtake each other."""
    free = [0.0] * workers
    events = []
    for i in range(n):
        w = min(range(workers), key=lambda k: (free[k], k))
        t0, dt = free[w], rng.uniform(0.5, 2.0)
        events += [(t0 + dt * (s + 1), i) for s in range(steps)]
        free[w] = t0 + dt * steps
    return [i for _, i in sorted(events)]
