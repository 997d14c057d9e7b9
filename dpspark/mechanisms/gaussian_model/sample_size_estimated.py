"""The stated error bound of ``gaussian_covariance``, ``gaussian_mean`` (estimated covariance) and ``gaussian_learner``.

Route (b) of issue 23 §1: the algorithm is unchanged, and its rounds' allowance e (the TYPICAL spectral error,
:func:`~dpspark.mechanisms.gaussian_model.covariance.spectral_allowance`) is never assumed to hold. Instead a
public interval [l_r, u_r] for the spectrum of A_r Sigma A_r^T is carried through the rounds, valid for ANY
preconditioner the rounds can produce on the events below, whatever e turned out to be.
Privacy never depends on this module: every sensitivity is the exact clip of its pass.

Model: n singles x_i ~ N(mu, Sigma) i.i.d., ||mu|| <= R, I <= Sigma <= kappa I, z_i = Sigma^-1/2 (x_i - mu),
zbar their mean. Bits: b data, a matrix, one = 2^(a+b). Every tail below is explicit
(:mod:`~dpspark.mechanisms.gaussian_model.tails`); each event fails w.p. <= p, and p = (beta - clamp) / (number of
events): the int32 input clamp (as the known-covariance bound), the count, the coarse noise, ||zbar||, the
coarse clip, the Gram operator norm, the Gram Frobenius norm, (1/n) sum ||z_i||^2, four per covariance pass (its
noise; its clip: the trace, the row truncation and the deviation of :func:`tails.clip_frobenius`), and for the mean
its noise and its clip. Every bound is a deterministic function of public inputs, so the least of several bounds
of one quantity (public grids of Chernoff parameters, :func:`tails.clip_move_sharp`) holds on the event of the
one that attains it. Noise vectors: ||N|| <= G sigma sqrt(LM(D, p)) (:func:`tails.vector_norm`), the count by its
subgaussian tail. Float eigendecompositions and products (post-processing) are inside the 2^-30 slack of 5.

1. Sampling, uniform over every preconditioner (the same z_i enter every pass):
   ||G - I||_op <= gamma (Vershynin Cor. 5.35), ||G - I||_F <= F (Lipschitz concentration, :func:`tails.gram_frobenius`),
   G = (1/n) sum z_i z_i^T; ||zbar||^2 <= LM(d, p) / n; (1/n) sum ||z_i|| <= m = sqrt(LM(n d, p) / n).
2. Count: |n~ - n| <= t_c; n_lo = n - t_c, n_hi = n + t_c.
3. Coarse mean (A_0 = a_0 I, a_0 <= 1/sqrt kappa, centre 0, radius r_0): in A_0's coordinates
   A_0 (mu~ - xbar) = N_0 / n~ + S'(1/n~ - 1/n) - (S - S') / n + A_0 (rounding), so
   ||A_0 (mu~ - xbar)|| <= V_0 = ||N_0|| / (n_lo one) + r_0 t_c / n_lo + B_0 + a_0 sqrt(d) 2^-(b+1), B_0 the clip
   move (rows move only if ||z_i|| > g - sqrt(d) 2^-(b+1); :func:`tails.clip_move_sharp`). With ||Sigma^-1/2 A_0^-1|| <= 1/a_0:
   v = Sigma^-1/2 (xbar - mu~) has ||v|| <= V = V_0 / a_0, and w_0 = Sigma^-1/2 (mu - mu~) = v - zbar, ||w_0|| <= W_0.
4. A covariance pass with preconditioner A (public given earlier outputs), B = A Sigma^1/2, P = B B^T, l <= P <= u
   (initially l = a_0^2, u = a_0^2 kappa). Row i gives y_i / one = B u_i with u_i = z_i + w_0 + xi_i,
   ||xi_i|| <= eps = sqrt(d) 2^-(b+1) + 2 sqrt(d) 2^-(a+b) / sqrt(l) (data and centre rounding). The ideal clip
   scales y_i to the sphere sqrt(T_int); the exact integer clip is within (2 + sqrt d) units of it (ζ below).
   In whitened coordinates B^-1 Z^ B^-T = (n/n~) (G_u - C) + B^-1 N~ B^-T, where
   G_u = (1/n) sum u_i u_i^T = G - zbar zbar^T + v v^T + Xi, ||Xi|| <= 2 eps (m + W_0) + eps^2;
   C = (1/n) sum (1 - s_i^2) u_i u_i^T >= 0, tr C <= (1/n) sum ((||z_i|| + W_0 + eps)^2 - T / u)_+ (a row is clipped
   only if u ||u_i||^2 > T; exact chi^2 Chernoff bound, :func:`tails.clip_trace`), T >= tau (the code's threshold),
   and ||C||_op <= ||C||_F <= c = :func:`tails.clip_frobenius` (the clipped directions are uniform: E of the
   dominating matrix is (E f / d) I, plus a Hilbert-space Bernstein deviation; about tr C / sqrt d at large n);
   N~ = noise / (n~ one^2) plus the clip rounding, ||.|| <= zeta n / n~, zeta = 2 sqrt(T) (2 + sqrt d) 2^-(a+b) +
   (2 + sqrt d)^2 2^-2(a+b). The noise is bounded at the largest threshold the code can choose (T_hi: the centre
   offset at ||A A_0^-1|| <= sqrt(u) / a_0 and n_lo; the noise scale is non-decreasing in the threshold, tested),
   with the coupling mass of T_hi's sampler (the actual plan differs only in its window; these masses are 2^-53 to
   2^-76 for the plans of d <= 100, up to 10^7 units, far below p).
   Hence with h = (n/n_lo) (gamma + ||zbar||^2 + V^2 + Xi + c) + t_c / n_lo and eta = ||N~||_op:
       (1 - h) P - eta I <= Z^ <= (1 + h) P + eta I.
5. A round: A' = (Z + e I)^-1/2 A with Z the PSD projection of Z^ and e in [e_lo, e_hi] (the code's allowance at
   n~ in [n_lo, n_hi] and the noise plans at T in [tau, T_hi]). P <= (Z^ + eta) / (1 - h) <= (Z + eta) / (1 - h), so
   A' Sigma A'^T <= max(1, eta / e_lo) / (1 - h) =: u'. Z <= Z^ + ||Z^_-|| I <= (1 + h) P + eta_2 I with
   eta_2 = eta + max(0, eta - (1 - h) l), so P >= lam (Z + e I) for lam = l / ((1 + h) l + eta_2 + e_hi) =: l'.
   Quantising A' moves it by <= d 2^-(a+1) (+ 2^-30 for the float products), i.e. B's singular values by
   q = sqrt(kappa) (d 2^-(a+1) + 2^-30): l_next = (sqrt l' - q)^2, u_next = (sqrt u' + q)^2.
6. The final pass (Sigma^ = A^-1 Z A^-T): if (1 - h) l > eta_F (eta_F the Frobenius noise bound, >= eta) then Z^ is
   positive definite and Z = Z^, and
       ||Sigma^-1/2 Sigma^ Sigma^-1/2 - I||_F <= E_cov = (n/n_lo) (F + ||zbar||^2 + V^2 + Xi + c) + sqrt(d) t_c / n_lo
                                                  + eta_F / l.
7. The mean (gaussian_mean, gaussian_learner): M = quantised Sigma^_f^-1/2, Sigma^_f = Sigma^ with eigenvalues
   floored at 1. With E_cov < 1: (1 - E) Sigma <= Sigma^_f <= (1 + 2E) Sigma, so M Sigma^1/2 has singular values in
   [1/sqrt(1 + 2E) - q, 1/sqrt(1 - E) + q] =: [s_lo, A]. The step is the known-covariance one
   (:mod:`~dpspark.mechanisms.gaussian_model.sample_size`) with that A, centre offset A W_0 (+ rounding), the radius
   between its smallest (clip) and largest (noise) values the code can choose, and 1/s_lo for 1/(1 - q):
       ||Sigma^-1/2 (mu^ - mu)|| <= ||zbar|| + E_m,  E_m = [||N_1|| / (n_lo one) + r t_c / n_lo + B_1] / s_lo + sqrt(d) 2^-(b+1).
8. gaussian_learner removes (mu^ - mu~)(mu^ - mu~)^T: whitened, it is (e_m + v)(e_m + v)^T with ||e_m|| <= E_m, so the
   term (n/n~) v v^T of E_cov becomes (n/n~ - 1) v v^T - e_m v^T - v e_m^T - e_m e_m^T:
   (n/n_lo) V^2 is replaced by (t_c / n_lo) V^2 + 2 E_m V + E_m^2. Below 1 the result is positive definite, so the
   PSD projection changes nothing; the bound is reported only when it is < 1 (else inf).
A release kind's bound is E_cov (covariance), ||zbar|| + E_m (mean), or the larger of the two (learner; both hold
on the same events).
"""

from __future__ import annotations

import math
from fractions import Fraction
from math import isqrt

from dpspark.mechanisms.gaussian_model import tails
from dpspark.mechanisms.gaussian_model.budget import CLIP_SHARE, SPLITS
from dpspark.mechanisms.gaussian_model.covariance import (ROW_BETA_COVARIANCE, ROW_BETA_MEAN, PublicBounds, initial_matrix,
                                                          pass_l2_sq, predicted_rounds, round_rhos, tail_sq)
from dpspark.mechanisms.gaussian_model.fixed import Scales, ceil_frac
from dpspark.mechanisms.gaussian_model.model_noise import VectorNoise, plan_noise
from dpspark.noise.grid import sqrt_upper

INF = math.inf  # report
ESTIMATED = ("gaussian_covariance", "gaussian_mean", "gaussian_learner")


def _noise_tail(noise: VectorNoise, p: float) -> float:
    """|Z| <= t for the one count coordinate w.p. >= 1 - p (subgaussian tail plus the coupling mass)."""
    q = p - tails.coupling_mass(noise)  # report
    if q <= p / 2:
        return INF  # report
    return noise.grid * float(noise.sampler.sigma) * math.sqrt(2.0 * math.log(2.0 / q)) * tails.UP  # report


def _clip_move(d: int, n: int, a: float, s: float, p: float) -> float:
    """(1/n) sum (a ||z_i|| - s)_+ w.p. >= 1 - p (the known-covariance Chernoff bound, or the chi^2 one)."""
    return tails.clip_move_sharp(d, n, a, s, p) * tails.UP  # report


def _cov_plan(d: int, t_real: Fraction, rho: Fraction, one_sq: int, max_units: int) -> VectorNoise:
    """The noise plan a covariance pass makes at threshold T (real units): covariance_pass's own arguments."""
    t_int = (Fraction(t_real) * one_sq).__floor__()  # the pass's matrix gets all but its clipped count's share
    return plan_noise(d * (d + 1) // 2, pass_l2_sq(d, t_int), rho * (1 - CLIP_SHARE), 2 * max_units * t_int)


def estimated_bounds(kind: str, d: int, n: int, rho: Fraction, radius: Fraction, kappa: Fraction, scales: Scales,
                     max_units: int, beta: float, clamp_fail: float, trace: dict | None = None) -> tuple[float, float]:
    """(E_cov of the released covariance, bound on ||Sigma^-1/2 (mu^ - mu)||) w.p. >= 1 - beta at n singles
    (module docstring); inf where a step fails or the kind has no such output. ``trace`` (a dict) receives the terms."""
    tr = trace if trace is not None else {}
    if kind not in ESTIMATED or n < 2:
        return INF, INF  # report
    count_rho, coarse_rho, cov_rho, mean_rho = SPLITS[kind].parts(Fraction(rho))
    rounds = predicted_rounds(d, Fraction(kappa), max_units, cov_rho)
    with_mean = kind != "gaussian_covariance"
    events = 7 + 4 * (rounds + 1) + (2 if with_mean else 0)
    if clamp_fail >= beta / 2:
        return INF, INF  # report
    p = (beta - clamp_fail) / events  # report
    a_bits, b_bits, yb = scales.matrix_bits, scales.data_bits, scales.y_bits
    one = float(1 << yb)  # report
    one_sq = 1 << (2 * yb)
    rd = math.sqrt(d)  # report
    data_round = rd * 2.0 ** -(b_bits + 1)  # report: ||rint(v 2^b) 2^-b - v|| per row
    # 1.-2. sampling and count
    gamma, _ = tails.gram_operator(d, n, p)  # report
    frob = tails.gram_frobenius(d, n, p)  # report
    zb = math.sqrt(tails.lm(d, p) / n)  # report
    m_abs = math.sqrt(tails.lm(n * d, p) / n)  # report
    t_c = _noise_tail(plan_noise(1, 1, count_rho, max_units), p)  # report
    n_lo, n_hi = n - t_c, n + t_c  # report
    if n_lo <= 1:
        return INF, INF  # report
    ratio = n / n_lo  # report
    # 3. the coarse mean in A_0 = a_0 I
    bounds = PublicBounds(d, Fraction(radius), Fraction(kappa), Fraction(1, 2), max_units)
    a0 = initial_matrix(bounds, a_bits)[0][0] / float(1 << a_bits)  # report
    g = sqrt_upper(tail_sq(d, ROW_BETA_MEAN), 32)
    r0 = Fraction(radius) * Fraction(math.ceil(min(1.0 + 2.0**-10, a0) * (1 << 20)), 1 << 20) + g
    t0_int = ceil_frac(r0 * r0 * one_sq)
    coarse = plan_noise(d, t0_int, coarse_rho * (1 - CLIP_SHARE), max_units * (isqrt(t0_int) + 1))
    clip_unit = (2.0 + rd) / one  # report: the exact integer clip is within 2 + sqrt d units of the ideal one
    b0 = _clip_move(d, n, 1.0, float(g) - a0 * data_round, p) + clip_unit  # report
    r0_hi = math.sqrt(t0_int) / one * tails.UP  # report
    v0 = tails.vector_norm(coarse, p) / (n_lo * one) + r0_hi * t_c / n_lo + b0 + a0 * data_round  # report
    v_big = v0 / a0 * tails.UP  # report
    w0 = zb + v_big  # report
    tr.update(p=p, rounds=rounds, gamma=gamma, frob=frob, zbar=zb, t_c=t_c, v=v_big, coarse_noise=v0, b0=b0, passes=[])  # report: trace
    sd0 = float(coarse.grid) * float(coarse.sampler.sigma) / one  # report: centre.sd = sd0 / n~
    # 4.-6. the covariance passes
    tau = tail_sq(d, ROW_BETA_COVARIANCE)
    sq_tau = sqrt_upper(tau, 32)
    gp = math.sqrt(float(tail_sq(d, Fraction(1, 1000))))  # report
    t_lo = float(tau) - 1.0 / one_sq  # report: floor(T one^2) / one^2 >= tau - one^-2
    lo, up = a0 * a0, a0 * a0 * float(kappa)  # report
    q_mat = math.sqrt(float(kappa)) * (d * 2.0 ** -(a_bits + 1) + 2.0**-30)  # report
    rhos = round_rhos(cov_rho, rounds)
    e_cov = INF  # report
    for r, prho in enumerate(rhos):
        final = r == len(rhos) - 1
        off_hi = min(math.sqrt(up) / a0 * sd0 / n_lo * gp * tails.UP, float(sq_tau))  # report
        t_hi = min(4 * tau, Fraction(ceil_frac((sq_tau + Fraction(off_hi)) ** 2 * 1024), 1024))
        plan_hi = _cov_plan(d, t_hi, prho, one_sq, max_units)
        eps = data_round + 2.0 * rd / one / math.sqrt(lo)  # report
        clip = tails.clip_frobenius(d, n, t_lo / up, w0 + eps, p, tails.clip_trace(d, n, t_lo / up, w0 + eps, p))  # report
        xi = 2.0 * eps * (m_abs + w0) + eps * eps  # report
        zeta = (2.0 * math.sqrt(float(t_hi)) * (2.0 + rd) / one + ((2.0 + rd) / one) ** 2) * tails.UP  # report
        base = zb * zb + v_big * v_big + xi + clip  # report
        h = (ratio * (gamma + base) + t_c / n_lo) * tails.UP  # report
        sd_hi = float(plan_hi.grid * plan_hi.sampler.sigma) / one_sq  # report: trace
        tr["passes"].append(dict(l=lo, u=up, t_hi=float(t_hi), clip=clip, xi=xi, h=h, sd=sd_hi))  # report: trace
        if h >= 1:
            return INF, INF  # report
        if final:
            eta_f = tails.sym_frobenius(plan_hi, d, p) / (n_lo * one_sq) + zeta * ratio  # report
            if (1.0 - h) * lo <= eta_f:
                return INF, INF  # report
            e_cov = (ratio * (frob + base) + rd * t_c / n_lo + eta_f / lo) * tails.UP  # report
            tr.update(eta_f=eta_f, noise_term=eta_f / lo, e_cov=e_cov)  # report: trace
            break
        plan_lo = _cov_plan(d, tau, prho, one_sq, max_units)
        eta = tails.sym_operator(plan_hi, d, p) / (n_lo * one_sq) + zeta * ratio  # report
        e_lo = 2.0 * math.sqrt(d / n_hi) + rd * float(plan_lo.grid) * float(plan_lo.sampler.sigma) / (n_hi * one_sq)  # report
        e_hi = (2.0 * math.sqrt(d / n_lo) + rd * float(plan_hi.grid) * float(plan_hi.sampler.sigma) / (n_lo * one_sq)) * tails.UP  # report
        tr["passes"][-1].update(eta=eta, e_lo=e_lo, e_hi=e_hi)  # report: trace
        u_next = max(1.0, eta / e_lo) / (1.0 - h) * tails.UP  # report
        eta2 = eta + max(0.0, eta - (1.0 - h) * lo)  # report
        l_next = lo / ((1.0 + h) * lo + eta2 + e_hi) / tails.UP  # report
        if math.sqrt(l_next) <= q_mat:  # report
            return INF, INF  # report
        lo, up = (math.sqrt(l_next) - q_mat) ** 2 / tails.UP, (math.sqrt(u_next) + q_mat) ** 2 * tails.UP  # report
    if not with_mean:
        return (e_cov if e_cov < 1 else INF), INF  # report
    # 7. the mean, in M = quantised Sigma^_f^-1/2
    if e_cov >= 1:
        return INF, INF  # report
    s_lo = 1.0 / math.sqrt(1.0 + 2.0 * e_cov) - q_mat  # report
    amp = (1.0 / math.sqrt(1.0 - e_cov) + q_mat) * tails.UP  # report
    if s_lo <= 0:
        return INF, INF  # report
    norm_m = 1.0 + d * 2.0 ** -(a_bits + 1) + 2.0**-30  # report: ||M|| (eigenvalues of Sigma^_f >= 1)
    delta1 = amp * w0 + 2.0 * rd / one  # report: the centre's distance from M mu, rounding included
    gf = float(g)  # report
    off_lo = min(gp / math.sqrt(n_hi) + s_lo * sd0 / n_hi * gp, gf)  # report: ||M A_0^-1|| >= s_lo / (a_0 sqrt kappa) >= s_lo
    off_hi = min((gp / math.sqrt(n_lo) + amp / a0 * sd0 / n_lo * gp) * tails.UP, gf)  # report
    r_clip = gf + off_lo  # report
    r_noise = g + Fraction(math.ceil(off_hi * (1 << 20)), 1 << 20)
    t1_int = ceil_frac(r_noise * r_noise * one_sq)
    fine = plan_noise(d, t1_int, mean_rho * (1 - CLIP_SHARE), max_units * (isqrt(t1_int) + 1))
    b1 = _clip_move(d, n, amp, r_clip - delta1 - norm_m * data_round, p) + clip_unit  # report
    r1 = math.sqrt(t1_int) / one * tails.UP  # report
    e_m = ((tails.vector_norm(fine, p) / (n_lo * one) + r1 * t_c / n_lo + b1) / s_lo + data_round) * tails.UP  # report
    mean_err = zb + e_m  # report
    tr.update(e_m=e_m, b1=b1, s_lo=s_lo, amp=amp, r_clip=r_clip, r_noise=float(r_noise), delta1=delta1, mean=mean_err)  # report: trace
    if kind == "gaussian_mean":
        return INF, mean_err  # report: trace
    # 8. the learner's centring correction
    out = e_cov - ratio * v_big * v_big + (t_c / n_lo) * v_big * v_big + 2.0 * e_m * v_big + e_m * e_m  # report
    return (out * tails.UP if out * tails.UP < 1 else INF), mean_err  # report
