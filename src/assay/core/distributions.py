"""The few distribution functions assay's statistics need, without scipy at run time.

The normal from the standard library; Student's t through the regularized incomplete beta function
(Lentz's continued fraction), which the tests pin against scipy to 1e-10.
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["normal_quantile", "normal_sf", "regularized_beta", "t_cdf", "t_quantile", "t_sf"]

_NORMAL = NormalDist()


def normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z, accurate in the far tail."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def normal_quantile(p: float) -> float:
    return _NORMAL.inv_cdf(p)


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 20_000):  # converges in O(sqrt(max(a, b))) steps
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return fraction


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom (a normal for infinite df)."""
    if math.isinf(df):
        return normal_sf(t)
    # P(|T| > |t|) is I_x(df/2, 1/2) with x = df/(df+t²); near t = 0 that x rounds to 1, so the
    # complement I_y(1/2, df/2) with y = t²/(df+t²) is used there instead.
    squared = t * t
    y = squared / (df + squared)
    if y < 0.5:
        tail = 0.5 * (1.0 - regularized_beta(0.5, df / 2.0, y))
    else:
        tail = 0.5 * regularized_beta(df / 2.0, 0.5, df / (df + squared))
    return tail if t > 0 else 1.0 - tail


def t_cdf(t: float, df: float) -> float:
    return 1.0 - t_sf(t, df)


def t_quantile(p: float, df: float) -> float:
    """The t with P(T ≤ t) = p, by bisection on the distribution function (monotone, so it cannot miss)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if math.isinf(df):
        return normal_quantile(p)
    low, high = -1.0, 1.0
    while t_cdf(low, df) > p:
        low *= 2.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low < 1e-12 * max(1.0, abs(middle)):
            break
    return (low + high) / 2.0
