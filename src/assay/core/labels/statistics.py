"""Agreement statistics in numpy: Cohen's κ (with a percentile bootstrap), Spearman's ρ, Krippendorff's α.

Pure functions over paired values; scikit-learn, scipy and the `krippendorff` package are their
test oracles only (tests/labels/test_statistics.py), never imported at run time.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Literal

__all__ = [
    "Level",
    "cohen_kappa",
    "confusion_matrix",
    "kappa_from_matrix",
    "kappa_interval",
    "krippendorff_alpha",
    "spearman",
]

Level = Literal["nominal", "ordinal", "interval"]


def confusion_matrix(first: Sequence[Hashable], second: Sequence[Hashable], categories: Sequence[Hashable]) -> Any:
    """counts[i][j]: pairs where `first` said categories[i] and `second` said categories[j]."""
    import numpy

    if len(first) != len(second):
        raise ValueError("the two raters must rate the same items")
    index = {category: position for position, category in enumerate(categories)}
    matrix = numpy.zeros((len(categories), len(categories)), dtype=numpy.int64)
    for a, b in zip(first, second):
        matrix[index[a], index[b]] += 1
    return matrix


def _kappas(matrices: Any) -> Any:
    """κ of each matrix in a (…, k, k) stack; NaN where it is undefined (both raters used one category)."""
    import numpy

    totals = matrices.sum(axis=(-2, -1)).astype(float)
    observed = numpy.trace(matrices, axis1=-2, axis2=-1) / totals
    expected = (matrices.sum(axis=-1) * matrices.sum(axis=-2)).sum(axis=-1) / totals**2
    with numpy.errstate(invalid="ignore", divide="ignore"):
        return numpy.where(expected < 1.0, (observed - expected) / (1.0 - expected), numpy.nan)


def kappa_from_matrix(matrix: Any) -> float | None:
    """Cohen's κ = (p_o − p_e) / (1 − p_e); None when undefined (no items, or p_e = 1)."""
    import numpy

    matrix = numpy.asarray(matrix)
    if matrix.sum() == 0:
        return None
    value = float(_kappas(matrix))
    return None if numpy.isnan(value) else value


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable], categories: Sequence[Hashable] | None = None) -> float | None:
    """Unweighted Cohen's κ of two raters over the same items."""
    categories = list(categories) if categories is not None else sorted(set(first) | set(second), key=str)
    return kappa_from_matrix(confusion_matrix(first, second, categories))


def kappa_interval(
    matrix: Any, *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of κ, resampling items with replacement.

    Resampling items is a multinomial draw over the confusion matrix's cells, so the cost follows
    the number of cells, not of items. Resamples where κ is undefined (every item in one category
    for both raters) are left out; None when there is nothing to resample or none is defined."""
    import numpy

    matrix = numpy.asarray(matrix, dtype=numpy.int64)
    total = int(matrix.sum())
    if total == 0:
        return None
    generator = numpy.random.default_rng(seed)
    cells = matrix.reshape(-1)
    draws = generator.multinomial(total, cells / total, size=resamples).reshape(resamples, *matrix.shape)
    kappas = _kappas(draws)
    kappas = kappas[~numpy.isnan(kappas)]
    if not len(kappas):
        return None
    tail = (1.0 - confidence) / 2.0
    low, high = numpy.quantile(kappas, [tail, 1.0 - tail])
    return float(low), float(high)


def _average_ranks(values: Any) -> Any:
    """Ranks 1..n with ties given their average rank (what Spearman's ρ needs)."""
    import numpy

    order = numpy.argsort(values, kind="mergesort")
    ranks = numpy.empty(len(values), dtype=float)
    ranks[order] = numpy.arange(1, len(values) + 1)
    _, inverse, counts = numpy.unique(values, return_inverse=True, return_counts=True)
    sums = numpy.zeros(len(counts))
    numpy.add.at(sums, inverse, ranks)
    return (sums / counts)[inverse]


def spearman(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Spearman's ρ: Pearson's correlation of the average ranks; None with < 2 items or a constant rater."""
    import numpy

    if len(first) != len(second):
        raise ValueError("the two raters must rate the same items")
    if len(first) < 2:
        return None
    a = _average_ranks(numpy.asarray(first, dtype=float))
    b = _average_ranks(numpy.asarray(second, dtype=float))
    a, b = a - a.mean(), b - b.mean()
    denominator = float(numpy.sqrt((a * a).sum() * (b * b).sum()))
    return None if denominator == 0.0 else float((a * b).sum() / denominator)


def krippendorff_alpha(
    units: Sequence[Sequence[float | str | None]], level: Level = "nominal", domain: Sequence[Any] | None = None
) -> float | None:
    """Krippendorff's α over items rated by any number of raters (None where a rater gave no value).

    `units` is one row per item, one column per rater. α = 1 − D_o / D_e from the coincidence matrix
    of the pairable values (items with two or more); `domain` orders the values for the ordinal
    distance (by default the values seen, sorted). None when no item has two values or only one
    value occurs."""
    import numpy

    rows = [[value for value in unit if value is not None] for unit in units]
    rows = [row for row in rows if len(row) >= 2]
    if not rows:
        return None
    values = list(domain) if domain is not None else sorted({value for row in rows for value in row})
    index = {value: position for position, value in enumerate(values)}
    counts = numpy.zeros((len(rows), len(values)))
    for row_number, row in enumerate(rows):
        for value in row:
            counts[row_number, index[value]] += 1
    if numpy.count_nonzero(counts.sum(axis=0)) < 2:
        return None
    pairable = counts.sum(axis=1)
    # o[c][k] = Σ_u n_uc (n_uk − [c = k]) / (m_u − 1)
    coincidences = numpy.einsum("uc,uk->ck", counts / (pairable - 1)[:, None], counts) - numpy.diag(
        (counts / (pairable - 1)[:, None]).sum(axis=0)
    )
    marginals = coincidences.sum(axis=0)
    total = marginals.sum()
    expected = (numpy.outer(marginals, marginals) - numpy.diag(marginals)) / (total - 1)
    distances = _distances(values, marginals, level)
    disagreement_expected = (expected * distances).sum()
    if disagreement_expected == 0.0:
        return None
    return float(1.0 - (coincidences * distances).sum() / disagreement_expected)


def _distances(values: Sequence[Any], marginals: Any, level: Level) -> Any:
    import numpy

    size = len(values)
    if level == "nominal":
        return 1.0 - numpy.eye(size)
    if level == "interval":
        numbers = numpy.asarray(values, dtype=float)
        return (numbers[:, None] - numbers[None, :]) ** 2
    if level == "ordinal":
        # δ²(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k) / 2)²
        cumulative = numpy.concatenate(([0.0], numpy.cumsum(marginals)))
        low = numpy.minimum.outer(numpy.arange(size), numpy.arange(size))
        high = numpy.maximum.outer(numpy.arange(size), numpy.arange(size))
        between = cumulative[high + 1] - cumulative[low]
        return (between - (marginals[low] + marginals[high]) / 2.0) ** 2
    raise ValueError(f"level must be nominal, ordinal or interval, got {level!r}")
