"""Explicit-constant tail bounds for the stated sample size of the estimated-covariance Gaussian releases.

Every function returns a float bound (``# report``: an accuracy claim, never privacy) that holds with
probability >= 1 - p; float sums are one-sided (each term rounded up by a relative 2^-40 where it matters).
The derivations are in :mod:`~dpspark.mechanisms.gaussian_model.sample_size_estimated`.
"""

from __future__ import annotations

import math

from dpspark.mechanisms.gaussian_model.model_noise import VectorNoise

INF = math.inf  # report
#: a relative slack for float sums of positive terms (one-sided upward)
UP = 1.0 + 2.0**-40  # report


def lm(d: float, p: float) -> float:
    """d + 2 sqrt(d x) + 2 x, x = ln(1/p): Pr[chi^2_d >= it] <= p (Laurent-Massart 2000, Lemma 1)."""
    x = math.log(1.0 / p)  # report
    return (d + 2.0 * math.sqrt(d * x) + 2.0 * x) * UP  # report


def chi2_sf(d: int, x: float) -> float:
    """Pr[chi^2_d > x] for an integer d >= 1 (closed form: Poisson sums, plus erfc for odd d)."""
    if x <= 0:
        return 1.0  # report
    h = x / 2.0  # report
    lh = math.log(h)  # report
    if d % 2 == 0:
        total = sum(math.exp(-h + k * lh - math.lgamma(k + 1)) for k in range(d // 2))  # report
    else:
        total = math.erfc(math.sqrt(h)) + sum(math.exp(-h + (k + 0.5) * lh - math.lgamma(k + 1.5))  # report
                                              for k in range((d - 1) // 2))  # report
    return min(1.0, total)  # report


def coupling_mass(noise: VectorNoise) -> float:
    """Pr[the implemented draw of some coordinate differs from an ideal discrete Gaussian draw]: the sampler's
    law is a mixture of the wrapped ideal law and a remainder of mass <= (f + e + 1) m / 2^bits
    (:mod:`dpspark.noise.dgauss`), and the wrap moves a draw only if |Z| > R (subgaussian tail)."""
    s = noise.sampler
    sig = float(s.sigma)  # report
    wrap = 2.0 * math.exp(-((s.R + 1) / sig) ** 2 / 2.0)  # report
    return noise.dims * ((s.floor + s.extra + 1) * s.m / 2.0**s.bits + wrap) * UP  # report


def _usable(noise: VectorNoise, p: float) -> float:
    """The share of p left for the ideal law's tail (0 when the coupling mass eats half of p)."""
    c = coupling_mass(noise)  # report
    return 0.0 if c >= p / 2 else p - c  # report


def vector_norm(noise: VectorNoise, p: float) -> float:
    """||N||_2 (integer units) w.p. >= 1 - p: G sigma sqrt(LM(D, p')). The ideal discrete Gaussian is
    sigma-subgaussian (CKS20 Cor. 9), so E exp(u Z^2 / sigma^2) <= (1 - 2u)^-1/2 (average exp(sqrt(2u) g Z /
    sigma) over an independent g ~ N(0, 1)): the chi^2 moment bound Laurent-Massart's proof uses."""
    q = _usable(noise, p)  # report
    if q <= 0:
        return INF  # report
    return noise.grid * float(noise.sampler.sigma) * math.sqrt(lm(noise.dims, q)) * UP  # report


def sym_frobenius(noise: VectorNoise, d: int, p: float) -> float:
    """||N||_F (integer units) of the symmetric noise matrix of a covariance pass (diagonal Z_ii, off-diagonal
    Z_ij / 2) w.p. >= 1 - p: ||N||_F^2 = sum a_k Z_k^2 with weights 1 (d) and 1/2 (d(d-1)/2), and Laurent-Massart's
    weighted bound sum a_k (Y_k - 1) <= 2 ||a||_2 sqrt x + 2 ||a||_inf x (the moment bound of :func:`vector_norm`)."""
    q = _usable(noise, p)  # report
    if q <= 0:
        return INF  # report
    x = math.log(1.0 / q)  # report
    s1 = d + d * (d - 1) / 4.0  # report
    s2 = math.sqrt(d + d * (d - 1) / 8.0)  # report
    return noise.grid * float(noise.sampler.sigma) * math.sqrt((s1 + 2.0 * s2 * math.sqrt(x) + 2.0 * x) * UP) * UP  # report


def sym_operator(noise: VectorNoise, d: int, p: float) -> float:
    """||N||_op (integer units) of the same matrix w.p. >= 1 - p: N = sum_k Z_k A_k with A_ii = E_ii and
    A_ij = (E_ij + E_ji) / 2, so v = ||sum sigma^2 A_k^2|| = sigma^2 (1 + (d - 1) / 4), and Pr[||N|| >= t] <=
    2 d exp(-t^2 / 2v) (Tropp 2012, Thm 4.1; its proof needs only E exp(theta Z A) <= exp(theta^2 sigma^2 A^2 / 2),
    which a sigma-subgaussian scalar Z gives on the eigenbasis of A)."""
    q = _usable(noise, p)  # report
    if q <= 0:
        return INF  # report
    v = 1.0 + (d - 1) / 4.0  # report
    return noise.grid * float(noise.sampler.sigma) * math.sqrt(2.0 * v * math.log(2.0 * d / q)) * UP  # report


def gram_operator(d: int, n: int, p: float) -> tuple[float, float]:
    """(gamma, s): ||(1/n) sum z z^T - I||_op <= gamma = 2 delta + delta^2, delta = (sqrt d + t) / sqrt n, and
    s_max(Z) <= s = sqrt n + sqrt d + t, w.p. >= 1 - p with t = sqrt(2 ln(2/p)) (Vershynin 2012, Cor. 5.35)."""
    t = math.sqrt(2.0 * math.log(2.0 / p))  # report
    delta = (math.sqrt(d) + t) / math.sqrt(n)  # report
    return (2.0 * delta + delta * delta) * UP, (math.sqrt(n) + math.sqrt(d) + t) * UP  # report


def gram_frobenius(d: int, n: int, p: float) -> float:
    """||(1/n) sum z z^T - I||_F w.p. >= 1 - p.

    f(Z) = ||Z^T Z / n - I||_F is L = 2 s / n Lipschitz (Frobenius) on K = {||Z||_op <= s}, s = sqrt n + sqrt d +
    sqrt(2 ln(2/p_K)), Pr[not K] <= p_K = 2^-20 p (Vershynin Cor. 5.35). Its McShane extension f~ is L-Lipschitz on
    R^(n d), equals f on K and is <= f(0) + L ||Z||_F = sqrt d + L ||Z||_F, so by Cauchy-Schwarz
    E f~ <= sqrt(E f^2) + sqrt(p_K (2 d + 2 L^2 n d)) with E f^2 = (d^2 + d) / n exactly (Var z_j^2 = 2,
    Var z_j z_k = 1). Gaussian concentration (Tsirelson-Ibragimov-Sudakov): f~ <= E f~ + L sqrt(2 ln(1/p'))
    w.p. >= 1 - p', p' = p - p_K; on K, f = f~."""
    p_k = p * 2.0**-20  # report
    s = math.sqrt(n) + math.sqrt(d) + math.sqrt(2.0 * math.log(2.0 / p_k))  # report
    lip = 2.0 * s / n  # report
    mean = math.sqrt((d * d + d) / n) + math.sqrt(p_k * (2.0 * d + 2.0 * lip * lip * n * d))  # report
    return (mean + lip * math.sqrt(2.0 * math.log(1.0 / (p - p_k)))) * UP  # report


def clip_trace(d: int, n: int, s_sq: float, w: float, p: float) -> float:
    """B with (1/n) sum_i ((||z_i|| + w)^2 - s_sq)_+ <= B w.p. >= 1 - p, z_i ~ N(0, I_d) i.i.d.

    (r + w)^2 <= (1 + e) r^2 + (1 + 1/e) w^2, so each term is <= (1 + e) (X_i - S)_+ with X_i = ||z_i||^2 ~ chi^2_d
    and S = (s_sq - (1 + 1/e) w^2) / (1 + e). Exactly (exponential tilting of chi^2_d),
    M(theta) = E exp(theta (X - S)_+) = 1 - Q_d(S) + exp(-theta S) (1 - 2 theta)^(-d/2) Q_d(S (1 - 2 theta)),
    and Chernoff: (1/n) sum (X_i - S)_+ <= ln M(theta) / theta + ln(1/p) / (theta n) for every theta in (0, 1/2);
    ln M <= M - 1. e and theta range over public grids."""
    best = INF  # report
    for e in ((0.0,) if w == 0 else (2.0**-8, 2.0**-6, 2.0**-4, 2.0**-2, 1.0)):  # public grid (e = 0 when w = 0)
        s = (s_sq - ((1.0 + 1.0 / e) * w * w if e else 0.0)) / (1.0 + e)  # report
        if s <= 0:
            continue
        q_s = chi2_sf(d, s)  # report
        for j in range(1, 64):  # public grid of theta in (0, 1/2)
            theta = j / 128.0  # report
            expo = -theta * s - d / 2.0 * math.log(1.0 - 2.0 * theta)  # report
            if expo > 50:
                continue
            m1 = math.exp(expo) * chi2_sf(d, s * (1.0 - 2.0 * theta)) * UP - q_s / UP  # report: M - 1, upward
            val = (1.0 + e) * (max(m1, 0.0) / theta + math.log(1.0 / p) / (theta * n)) * UP  # report
            best = min(best, val)  # report
    return best


def clip_move_sharp(d: int, n: int, a: float, s: float, p: float) -> float:
    """The smaller of :func:`clip_move_bound` and (a^2 / 2s) x :func:`clip_trace` at s^2 / a^2: for x >= s,
    x - s = (x^2 - s^2) / (x + s) <= (x^2 - s^2) / 2s, so (a r - s)_+ <= a^2 (r^2 - s^2 / a^2)_+ / 2s."""
    if s <= 0 or n < 1:
        return INF  # report
    return min(clip_move_bound(d, n, a, s, p), a * a / (2.0 * s) * clip_trace(d, n, (s / a) ** 2, 0.0, p))  # report


def clip_move_bound(d: int, n: int, a: float, s: float, p: float) -> float:
    """B with (1/n) sum_i (a ||z_i|| - s)_+ <= B w.p. >= 1 - p (:mod:`.sample_size`'s docstring, item 5); inf when
    s <= 0."""
    if s <= 0 or n < 1:
        return INF  # report
    best = INF  # report
    for j in range(60):  # a public grid of theta in [1/64, 2^15/64]
        theta = 2.0 ** (j / 4.0 - 6.0)  # report
        expo = theta * (a * math.sqrt(d) - s) + theta * theta * a * a / 2.0  # report
        if expo > 50:
            continue
        best = min(best, (n * math.exp(expo) + math.log(1.0 / p)) / (theta * n))  # report
    return best


def excess_moments(d: int, s: float) -> tuple[float, float]:
    """Upper bounds of E (X - s)_+ and E (X - s)_+^2 for X ~ chi^2_d, exact up to float slack: x f_d(x) = d f_{d+2}(x)
    and x^2 f_d(x) = d (d + 2) f_{d+4}(x) give E (X - s)_+ = d Q_{d+2}(s) - s Q_d(s) and
    E (X - s)_+^2 = d (d + 2) Q_{d+4}(s) - 2 s d Q_{d+2}(s) + s^2 Q_d(s)."""
    s = max(s, 0.0)  # report
    q0, q2, q4 = chi2_sf(d, s), chi2_sf(d + 2, s), chi2_sf(d + 4, s)  # report
    pos1, pos2 = d * q2, d * (d + 2) * q4 + s * s * q0  # report
    m1 = max(0.0, pos1 - s * q0) + 1e-9 * pos1  # report: the slack covers the float error of the cancellation
    m2 = max(0.0, pos2 - 2.0 * s * d * q2) + 1e-9 * pos2  # report
    return m1, m2


def clip_frobenius(d: int, n: int, s_sq: float, w: float, p: float, trace: float) -> float:
    """||C||_F w.p. >= 1 - 2p (a truncation event and a deviation event, besides the event tr C <= ``trace``), for
    C = (1/n) sum c_i u^_i u^_i^T with 0 <= c_i <= f(||z_i||) = ((||z_i|| + w)^2 - s_sq)_+, u^_i = u_i / ||u_i||,
    ||u_i - z_i|| <= w, c_i = 0 unless ||u_i||^2 > s_sq (so ||z_i|| >= r_0 = sqrt(s_sq) - w).

    * ||u^ u^^T - z^ z^^T||_F <= sqrt 2 ||u^ - z^|| <= 2 sqrt 2 w / r_0, so ||C - C_z||_F <= trace 2 sqrt 2 w / r_0, C_z the
      same sum with z^_i = z_i / ||z_i||.
    * 0 <= C_z <= D = (1/n) sum f(||z_i||) z^_i z^_i^T, so ||C_z||_F <= ||D||_F (Weyl: the eigenvalues are ordered).
    * ||z_i|| and z^_i are independent and z^_i is uniform on the sphere: E D = (E f / d) I, ||E D||_F = E f / sqrt d.
    * All ||z_i||^2 <= LM(d, p / n) (union over the rows), so D equals its truncation at f_max = f(sqrt LM(d, p / n));
      Smale-Zhou 2007, Lemma 2 (Pinelis; H the symmetric matrices with the Frobenius norm, ||xi|| <= f_max,
      E ||xi||^2 <= E f^2): ||D - E D||_F <= 2 f_max ln(2/p) / n + sqrt(2 E f^2 ln(2/p) / n) w.p. >= 1 - p.
    * E f and E f^2 through (r + w)^2 <= (1 + e) r^2 + (1 + 1/e) w^2 and :func:`excess_moments`.
    The result is the smaller of this and ``trace`` (||C||_F <= tr C for C >= 0)."""
    r0 = math.sqrt(max(s_sq, 0.0)) - w  # report
    if r0 <= 0 or trace == INF:
        return trace
    fmax = max(0.0, (math.sqrt(lm(d, p / n)) + w) ** 2 - s_sq)  # report
    big_l = math.log(2.0 / p)  # report
    pert = trace * 2.0 * math.sqrt(2.0) * w / r0  # report
    best = trace  # report
    for e in ((0.0,) if w == 0 else (2.0**-8, 2.0**-6, 2.0**-4, 2.0**-2, 1.0)):  # public grid
        s = (s_sq - ((1.0 + 1.0 / e) * w * w if e else 0.0)) / (1.0 + e)  # report
        if s <= 0:
            continue
        m1, m2 = excess_moments(d, s)  # report
        ef, ef2 = (1.0 + e) * m1, (1.0 + e) ** 2 * m2  # report
        dev = 2.0 * fmax * big_l / n + math.sqrt(2.0 * ef2 * big_l / n)  # report
        best = min(best, (ef / math.sqrt(d) + dev + pert) * UP)  # report
    return best
