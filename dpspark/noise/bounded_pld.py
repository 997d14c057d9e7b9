"""Certified privacy-loss-distribution (PLD) delta of the discrete bounded noise: the certificate behind
``calibrate(method="pld")`` (:func:`dpspark.noise.bounded_calibrate.calibrate_pld` searches M with it).

Privacy claim: for the implemented pmf P of ``BoundedNoise(M, family, bits)``
and Q = P shifted by Delta, the k-fold composition is (eps, delta)-DP with
delta = E_{P^k}[(1 - e^{eps - L})_+] (DK Lemma 10.1), L the summed privacy
loss. We bound that expectation from above on a *pessimistic* PLD:

* every single-query loss ln(w_j / w_{j+Delta}) is rounded **up** to a grid of
  step eta (its arb ball's upper end), and an uncovered point (w_{j+Delta} = 0)
  is an atom at +infinity;
* after each product of the binary powering the loss mass above a window goes
  to the +infinity atom and the mass below it is moved **up** to the window's
  lower edge;
* the polynomial products are arb_poly products (ball arithmetic), and delta is
  evaluated in arb, so the result is an upper bound on the true delta.

Raising a loss only increases (1 - e^{eps - L})_+, so each step is conservative.
Adaptive queries: for Delta = 1 the shifts are in {-1, 0, 1}; shift -1 mirrors
+1 (symmetric pmf) and 0 is lossless, so the pair (P, P+1) dominates every step
and the adaptive composition theorem for trade-off functions (Dong, Roth, Su
2022, Theorem 3.2) gives the same bound; Delta > 1 additionally needs the table
to be log-concave (monotone likelihood ratio), which is checked exactly
(w_a^2 >= w_{a-1} w_{a+1}). No time target: the table and the PLD are
enumerated, so this is for M up to about 10^5 (docs/bounded-noise.md).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from dpspark.noise.bounded import BoundedNoise, BoundedNoiseError

#: Round single-query losses up (True, certified). Tests flip it to show the exact check catches a round-down PLD.
_ROUND_UP = True
#: Largest M the PLD method enumerates.
PLD_MAX_M = 1 << 17
#: Lower edge of every intermediate PLD window, in standard deviations below its mean.
WINDOW_SD = 40
#: Upper edge of every window: losses above epsilon + this go to the +infinity atom.
UPPER_MARGIN = Fraction(1, 2)


class PLDRefused(BoundedNoiseError):
    """The PLD certifier cannot handle these parameters."""


def is_log_concave(noise: BoundedNoise) -> bool:
    """Exact check w_j^2 >= w_{j-1} w_{j+1} over the whole symmetric pmf (zeros allowed only at the ends)."""
    w = noise.half_weights()
    full = [w[a] for a in range(noise.M - 1, 0, -1)] + w  # pmf(j) = full[j + M - 1] / d
    for i in range(1, len(full) - 1):
        if full[i] * full[i] < full[i - 1] * full[i + 1]:
            return False
    return True


def pld_delta(noise: BoundedNoise, k: int, epsilon: Fraction, sensitivity: int = 1, eta: Fraction | None = None,
              prec: int = 256) -> Fraction:
    """A certified upper bound on delta(epsilon) of k compositions of (P, P + sensitivity)."""
    from flint import arb, arb_poly, ctx, fmpq

    if noise.M > PLD_MAX_M:
        raise PLDRefused(f"PLD enumerates the pmf; M = {noise.M} > {PLD_MAX_M}")
    if sensitivity > 1 and not is_log_concave(noise):
        raise PLDRefused("the table is not log-concave: the worst shift is not certified for Delta > 1")
    if eta is None:
        eta = Fraction(1, 1 << max(8, math.ceil(math.log2(20 * k / float(epsilon)))))  # report (public grid choice)
    old = ctx.prec
    ctx.prec = prec
    try:
        M, d = noise.M, noise.d
        w = noise.half_weights()
        s = sensitivity
        e_arb = arb(fmpq(eta.numerator, eta.denominator))
        logs = [arb(x).log() if x else None for x in w]
        idx: dict[int, Any] = {}
        inf_mass = Fraction(0)
        top = (epsilon + UPPER_MARGIN) / eta
        hi_i = top.numerator // top.denominator + 1  # every window ends here
        for j in range(-(M - 1), M):
            wj = w[abs(j)]
            if not wj:
                continue
            b = abs(j + s)
            if b > M - 1 or not w[b]:
                inf_mass += Fraction(wj, d)
                continue
            loss = (logs[abs(j)] - logs[b]) / e_arb
            if _ROUND_UP:
                i = int(loss.upper().ceil().unique_fmpz())  # round the loss up to the grid
            else:  # pragma: no cover - mutant for tests only
                i = int(loss.lower().floor().unique_fmpz())
            if i > hi_i:
                inf_mass += Fraction(wj, d)
                continue
            idx[i] = idx.get(i, Fraction(0)) + Fraction(wj, d)
        lo = min(idx)
        base = arb_poly([arb(fmpq(idx.get(i, 0).numerator, idx.get(i, 0).denominator)) for i in range(lo, max(idx) + 1)])
        # float moments only place the truncation windows (correctness never depends on them)
        mean1 = sum(float(q) * i for i, q in idx.items())  # report
        var1 = sum(float(q) * i * i for i, q in idx.items()) - mean1 * mean1  # report

        def window(poly: Any, off: int, inf: Any, n: int) -> tuple[Any, int, Any]:
            sd = math.sqrt(max(var1, 1e-300) * n)  # report
            lo_i = min(hi_i - 1, math.floor(mean1 * n - WINDOW_SD * sd - 2))
            coeffs = poly.coeffs()
            below = arb(0)
            above = arb(0)
            keep = []
            for t, c in enumerate(coeffs):
                i = off + t
                if i < lo_i:
                    below += c
                elif i > hi_i:
                    above += c
                else:
                    keep.append((i, c))
            if not keep:
                return arb_poly([below]), lo_i, inf + above
            start = min(lo_i, keep[0][0]) if below.is_zero() else lo_i
            out = [arb(0)] * (keep[-1][0] - start + 1)
            for i, c in keep:
                out[i - start] = c
            out[0] += below  # mass below the window moves up to its lower edge (pessimistic)
            return arb_poly(out), start, inf + above

        inf1 = arb(fmpq(inf_mass.numerator, inf_mass.denominator))
        # binary powering: result = base^k, with windows after every product
        res_poly, res_off, res_inf, res_n = None, 0, arb(0), 0
        cur_poly, cur_off, cur_inf, cur_n = base, lo, inf1, 1
        kk = k
        while kk:
            if kk & 1:
                if res_poly is None:
                    res_poly, res_off, res_inf, res_n = cur_poly, cur_off, cur_inf, cur_n
                else:
                    res_n += cur_n
                    res_poly, res_off, res_inf = window(res_poly * cur_poly, res_off + cur_off,
                                                        res_inf + cur_inf, res_n)
            kk >>= 1
            if kk:
                cur_n *= 2
                cur_poly, cur_off, cur_inf = window(cur_poly * cur_poly, 2 * cur_off, 2 * cur_inf, cur_n)
        eps = arb(fmpq(epsilon.numerator, epsilon.denominator))
        total = res_inf  # union bound for the infinite-loss atoms (each added, never multiplied away)
        for t, c in enumerate(res_poly.coeffs()):
            i = res_off + t
            loss = i * e_arb
            if (loss - eps).lower() > 0 or (loss - eps).overlaps(arb(0)):
                total += c * (1 - (eps - loss).exp()).max(arb(0))
        up = total.upper()
        man, ex = up.mid().man_exp()
        return min(Fraction(1), Fraction(int(man)) * Fraction(2) ** int(ex))
    finally:
        ctx.prec = old
