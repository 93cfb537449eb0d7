"""Non-negative least squares on relative errors, exactly, by trying every subset of terms: the cost
model's fit (analyze.costmodel), a counted model's own rates (analyze.counted_fit) and their bootstrap
refits (analyze.breakeven_interval) all solve with `nnls`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

# Subsets with fewer terms win when their relative residual sum of squares is no worse than
# this (absolute, per point): it stops a noise-free fit keeping a 1e-20 coefficient.
_TIE_RSS_PER_POINT = 1e-12


def nnls(weighted: np.ndarray, target: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Solve non-negative least squares by trying every subset of terms.

    Non-negative least squares of weighted · c ≈ target (default 1) by trying every subset of terms;
    `weighted` is (points × terms), or a stack of them (one per bootstrap resample), solved together,
    `target` (points) or a stack of the same shape.

    The NNLS optimum is the unconstrained fit on its own set of positive terms, so the best
    feasible subset fit is the exact optimum; with four terms there are only fifteen subsets (and
    no term at all, the one feasible fit where a target is negative).
    Of the subsets within a tie tolerance of the best, the one with the fewest terms wins.
    """
    n_points, n_terms = weighted.shape[-2:]
    goal = np.ones(weighted.shape[:-1]) if target is None else np.broadcast_to(target, weighted.shape[:-1])
    scale = np.linalg.norm(weighted, axis=-2)  # unit columns: FLOP and step counts differ by 1e9
    fits, rsss, sizes = [np.zeros((*weighted.shape[:-2], n_terms))], [np.sum(goal**2, axis=-1)], [0]
    for size in range(1, n_terms + 1):
        for subset in itertools.combinations(range(n_terms), size):
            columns = list(subset)
            unit = weighted[..., columns] / scale[..., None, columns]
            solution = (np.linalg.pinv(unit) @ goal[..., None])[..., 0] / scale[..., columns]
            coefficients = np.zeros((*weighted.shape[:-2], n_terms))
            coefficients[..., columns] = solution
            rss = np.sum(((weighted @ coefficients[..., None])[..., 0] - goal) ** 2, axis=-1)
            fits.append(coefficients)
            rsss.append(np.where(np.any(solution < 0, axis=-1), np.inf, rss))  # infeasible: never chosen
            sizes.append(size)
    rss = np.stack(rsss)
    best = rss.min(axis=0)  # no term at all is always feasible
    near = rss <= best * (1 + 1e-9) + _TIE_RSS_PER_POINT * n_points
    size = np.array(sizes).reshape((-1,) + (1,) * best.ndim)
    fewest = np.where(near, size, n_terms + 1).min(axis=0)
    chosen = np.where(near & (size == fewest), rss, np.inf).argmin(axis=0)
    picked = np.take_along_axis(np.stack(fits), chosen[None, ..., None], axis=0)[0]
    return picked, np.take_along_axis(rss, chosen[None], axis=0)[0]


def condition_number(weighted: np.ndarray) -> float:
    """Of the column-normalised design; math.inf where a column is zero or the columns are dependent."""
    norms = np.linalg.norm(weighted, axis=0)
    if np.any(norms == 0):
        return math.inf
    singular = np.linalg.svd(weighted / norms, compute_uv=False)
    return math.inf if singular[-1] == 0 else float(singular[0] / singular[-1])


def r_squared(measured: np.ndarray, predicted: np.ndarray) -> float | None:
    total = float(np.sum((measured - measured.mean()) ** 2))
    if total == 0:
        return None  # all times equal: R² is undefined
    return 1.0 - float(np.sum((measured - predicted) ** 2)) / total
