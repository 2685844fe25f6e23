"""TrueSkill for one player against another, computed as the ``trueskill`` package (0.4.5, its default backend)
computes it, so that EQ-Bench Creative Writing's ratings come out the same without that package.

The package runs expectation propagation on a factor graph in natural parameters (precision ``pi``, precision times
mean ``tau``), with a fitted approximation of erfc (Numerical Recipes' ``erfcc``, error below 1.2e-7) and of its
inverse. Both matter for EQ-Bench: with ``draw_probability=0`` the inverse gives a draw margin of about 1e-5 instead
of 0, so a draw does not fail but moves the ratings by what the erfc fit's error makes of a tiny interval (two equal
ratings keep their means and gain sigma). ``rate_1vs1`` therefore passes the messages of the two-player graph in
the package's order, with the same fits, and raises ``FloatingPointError`` where the package does (a win whose
update leaves the range 0 < w < 1, or a draw whose interval has no mass).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_DELTA = 0.0001  # the package's convergence threshold
_SQRT2 = math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def erfc(x: float) -> float:
    """Numerical Recipes' Chebyshev fit of the complementary error function."""
    z = abs(x)
    t = 1.0 / (1.0 + z / 2.0)
    inner = 0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))
    series = 1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * inner)))
    r = t * math.exp(-z * z - 1.26551223 + t * series)
    return 2.0 - r if x < 0 else r


def erfcinv(y: float) -> float:
    """The inverse of ``erfc``: a rational first guess refined by two Newton-like steps."""
    if y >= 2:
        return -100.0
    if y <= 0:
        return 100.0
    lower_half = y < 1
    if not lower_half:
        y = 2 - y
    t = math.sqrt(-2 * math.log(y / 2.0))
    x = -0.70711 * ((2.30753 + t * 0.27061) / (1.0 + t * (0.99229 + t * 0.04481)) - t)
    for _ in range(2):
        err = erfc(x) - y
        x += err / (1.12837916709551257 * math.exp(-(x**2)) - x * err)
    return x if lower_half else -x


def cdf(x: float) -> float:
    return 0.5 * erfc(-x / _SQRT2)


def pdf(x: float) -> float:
    return _INV_SQRT_2PI * math.exp(-(x**2 / 2))


def ppf(p: float) -> float:
    return 0 - _SQRT2 * erfcinv(2 * p)


def draw_margin(draw_probability: float, players: int, beta: float) -> float:
    return ppf((draw_probability + 1) / 2.0) * math.sqrt(players) * beta


def v_win(t: float, margin: float) -> float:
    x = t - margin
    denominator = cdf(x)
    return pdf(x) / denominator if denominator else -x


def w_win(t: float, margin: float) -> float:
    x = t - margin
    v = v_win(t, margin)
    w = v * (v + x)
    if 0 < w < 1:
        return w
    raise FloatingPointError("TrueSkill win update out of range (the package raises here too)")


def v_draw(t: float, margin: float) -> float:
    a, b = margin - abs(t), -margin - abs(t)
    denominator = cdf(a) - cdf(b)
    value = (pdf(b) - pdf(a)) / denominator if denominator else a
    return value * (-1 if t < 0 else 1)


def w_draw(t: float, margin: float) -> float:
    a, b = margin - abs(t), -margin - abs(t)
    denominator = cdf(a) - cdf(b)
    if not denominator:
        raise FloatingPointError("TrueSkill draw interval has no mass (the package raises here too)")
    v = v_draw(abs(t), margin)
    return v**2 + (a * pdf(a) - b * pdf(b)) / denominator


@dataclass(frozen=True)
class Gaussian:
    """A normal distribution in natural parameters, as the package stores every rating and message."""

    pi: float = 0.0
    tau: float = 0.0

    @classmethod
    def of(cls, mu: float, sigma: float) -> Gaussian:
        pi = sigma**-2
        return cls(pi, pi * mu)

    @property
    def mu(self) -> float:
        return self.tau / self.pi if self.pi else 0.0

    @property
    def sigma(self) -> float:
        return math.sqrt(1 / self.pi) if self.pi else math.inf

    def __mul__(self, other: Gaussian) -> Gaussian:
        return Gaussian(self.pi + other.pi, self.tau + other.tau)

    def __truediv__(self, other: Gaussian) -> Gaussian:
        return Gaussian(self.pi - other.pi, self.tau - other.tau)


Rating = Gaussian
_NOTHING = Gaussian()


def _weighted_sum(terms: list[tuple[float, Gaussian]]) -> Gaussian:
    """The message of a sum factor: ``sum(coefficient * term)`` of the terms' distributions (each term given as the
    variable's value over the message the factor sent it)."""
    inverse_pi, mu = 0.0, 0.0
    for coefficient, term in terms:
        mu += coefficient * term.mu
        if inverse_pi == math.inf:
            continue
        try:
            inverse_pi += coefficient**2 / float(term.pi)
        except ZeroDivisionError:  # a term of no precision: the sum has none either
            inverse_pi = math.inf
    pi = 1.0 / inverse_pi
    return Gaussian(pi, pi * mu)


class _Variable:
    """A node of the graph: its value and the last message each factor sent it."""

    def __init__(self) -> None:
        self.value = _NOTHING
        self.messages: dict[str, Gaussian] = {}

    def without(self, factor: str) -> Gaussian:
        return self.value / self.messages.get(factor, _NOTHING)

    def take_message(self, factor: str, message: Gaussian) -> None:
        old = self.messages.get(factor, _NOTHING)
        self.messages[factor] = message
        self.value = self.value / old * message

    def take_value(self, factor: str, value: Gaussian) -> float:
        """Set the value (a truncation's result); returns how far it moved, the schedule's convergence test."""
        old = self.messages.get(factor, _NOTHING)
        self.messages[factor] = value * old / self.value
        moved_pi = abs(self.value.pi - value.pi)
        moved = 0.0 if moved_pi == math.inf else max(abs(self.value.tau - value.tau), math.sqrt(moved_pi))
        self.value = value
        return moved


@dataclass(frozen=True)
class TrueSkill:
    mu: float = 25.0
    sigma: float = 25.0 / 3
    beta: float = 25.0 / 6
    tau: float = 25.0 / 300
    draw_probability: float = 0.10

    def rating(self, mu: float | None = None, sigma: float | None = None) -> Rating:
        return Gaussian.of(self.mu if mu is None else mu, self.sigma if sigma is None else sigma)

    def rate_1vs1(self, first: Rating, second: Rating, drawn: bool = False) -> tuple[Rating, Rating]:
        """The ratings after ``first`` beats ``second`` (or they draw)."""
        margin = draw_margin(self.draw_probability, 2, self.beta)
        v_func, w_func = (v_draw, w_draw) if drawn else (v_win, w_win)
        skills, performances, teams = [], [], []
        for prior in (first, second):
            # the prior, widened by the dynamics factor tau
            skill = Gaussian.of(prior.mu, math.sqrt(prior.sigma**2 + self.tau**2))
            shrink = 1.0 / (1.0 + self.beta**2 * skill.pi)  # performance = skill + noise of variance beta^2
            performance = _Variable()
            performance.take_message("likelihood", Gaussian(shrink * skill.pi, shrink * skill.tau))
            team = _Variable()
            team.take_message("team", _weighted_sum([(1, performance.without("team"))]))
            skills.append(skill)
            performances.append(performance)
            teams.append(team)
        difference = _Variable()
        for _ in range(10):
            difference.take_message("difference", _weighted_sum([(1, teams[0].without("difference")),
                                                                  (-1, teams[1].without("difference"))]))  # fmt: skip
            cavity = difference.without("truncation")
            sqrt_pi = math.sqrt(cavity.pi)
            t, scaled_margin = cavity.tau / sqrt_pi, margin * sqrt_pi
            v, w = v_func(t, scaled_margin), w_func(t, scaled_margin)
            truncated = Gaussian(cavity.pi / (1.0 - w), (cavity.tau + sqrt_pi * v) / (1.0 - w))
            if difference.take_value("truncation", truncated) <= MIN_DELTA:
                break
        teams[0].take_message("difference", _weighted_sum([(1.0, difference.without("difference")),
                                                           (1.0, teams[1].without("difference"))]))  # fmt: skip
        teams[1].take_message("difference", _weighted_sum([(1.0, teams[0].without("difference")),
                                                           (-1.0, difference.without("difference"))]))  # fmt: skip
        rated = []
        for skill, performance, team in zip(skills, performances, teams):
            performance.take_message("team", _weighted_sum([(1.0, team.without("team"))]))
            message = performance.without("likelihood")
            shrink = 1.0 / (1.0 + self.beta**2 * message.pi)
            posterior = skill * Gaussian(shrink * message.pi, shrink * message.tau)
            rated.append(Gaussian.of(posterior.mu, posterior.sigma))
        return rated[0], rated[1]
