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
* level-dependent grids: a PLD longer than the public cap MAX_LEN first sends its
  top tail (exact/arb mass at most TAIL_MASS * n / k for an n-fold block, so at
  most TAIL_MASS in all) to the +infinity atom and moves a long base's losses
  below a public floor (mean - WINDOW_SD sd, at least -(eps + 1/2)) **up** to it;
  if still too long it is coarsened, index i -> ceil(i / 2) (grid step doubled,
  every loss rounded **up**), and the factors res * cur are brought to the
  coarser of their two grids before each product;
* the polynomial products are arb_poly products (ball arithmetic), and delta is
  evaluated in arb, so the result is an upper bound on the true delta.

Raising a loss only increases (1 - e^{eps - L})_+, so each step is conservative.
Adaptive queries: for Delta = 1 the shifts are in {-1, 0, 1}; shift -1 mirrors
+1 (symmetric pmf) and 0 is lossless, so the pair (P, P+1) dominates every step
and the adaptive composition theorem for trade-off functions (Dong, Roth, Su
2022, Theorem 3.2) gives the same bound; Delta > 1 additionally needs the table
to be log-concave (monotone likelihood ratio), which is checked exactly
(w_a^2 >= w_{a-1} w_{a+1}). No time target: the table and the PLD are
enumerated, so this is for M up to about 10^5 (docs/bounded-noise.md); the length cap keeps every product
at most 2 * MAX_LEN long at any k.
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
#: Public length cap of every PLD polynomial: a longer one is coarsened (grid step doubled, losses rounded up).
MAX_LEN = 1 << 16
#: Coarsening rounds the index up (True, certified). Tests flip it to show the exact check catches a round-down.
_COARSEN_UP = True
#: At most this many coarsenings of one polynomial (a window is a few grid steps wide at any grid).
MAX_COARSEN = 40
#: A too-long PLD sends its top tail to +inf up to this much mass in all (k * per-query), then coarsens.
TAIL_MASS = Fraction(1, 1 << 40)


def coarsen(coeffs: list[Any], off: int) -> tuple[list[Any], int]:
    """Double the grid step: index i -> ceil(i / 2), i.e. every loss is rounded UP to the coarser grid
    (pessimistic). ``coeffs[t]`` is the mass at index ``off + t``; returns the new coefficients and offset."""
    if _COARSEN_UP:
        new_off = -((-off) // 2)
        out: list[Any] = [None] * (-((-(off + len(coeffs) - 1)) // 2) - new_off + 1)
        for t, c in enumerate(coeffs):
            m = -((-(off + t)) // 2) - new_off
            out[m] = c if out[m] is None else out[m] + c
    else:  # pragma: no cover - mutant for tests only: rounds losses DOWN
        new_off = off // 2
        out = [None] * ((off + len(coeffs) - 1) // 2 - new_off + 1)
        for t, c in enumerate(coeffs):
            m = (off + t) // 2 - new_off
            out[m] = c if out[m] is None else out[m] + c
    zero = coeffs[0] * 0
    return [zero if c is None else c for c in out], new_off


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
        if max(idx) - lo + 1 > MAX_LEN:
            # public floor -(eps + 1/2): a lower loss is moved UP to it (pessimistic); only when the base is long
            # and +-WINDOW_SD sd around the mean: a lower loss moves UP to the floor, a higher one goes to +inf
            m1 = sum(float(q) * i for i, q in idx.items())  # report (public placement only)
            s1 = math.sqrt(max(sum(float(q) * i * i for i, q in idx.items()) - m1 * m1, 1e-300))  # report
            floor_i = max(-(hi_i - 1), math.floor(m1 - WINDOW_SD * s1) - 2)
            acc, ceil_i = Fraction(0), max(idx)
            for i in sorted(idx, reverse=True):  # top tail of exact mass <= TAIL_MASS / k
                if i <= floor_i + 1 or acc + idx[i] > TAIL_MASS / k:
                    break
                acc += idx[i]
                ceil_i = i - 1
            inf_mass += sum((q for i, q in idx.items() if i > ceil_i), Fraction(0))
            moved = sum((q for i, q in idx.items() if i < floor_i), Fraction(0))
            idx = {i: q for i, q in idx.items() if floor_i <= i <= ceil_i}
            if moved:
                idx[floor_i] = idx.get(floor_i, Fraction(0)) + moved
            lo = min(idx)
        # float moments only place the truncation windows (correctness never depends on them)
        mean1 = sum(float(q) * i for i, q in idx.items())  # report
        var1 = sum(float(q) * i * i for i, q in idx.items()) - mean1 * mean1  # report
        base_c = [arb(fmpq(idx.get(i, 0).numerator, idx.get(i, 0).denominator)) for i in range(lo, max(idx) + 1)]
        g0 = 0
        while len(base_c) > MAX_LEN:  # still too long: coarsen the base itself (losses rounded up)
            base_c, lo = coarsen(base_c, lo)
            g0 += 1

        def hi_at(g: int) -> int:
            return (top.numerator >> g) // top.denominator + 1  # upper edge of a grid-2^g window

        def window(coeffs: list[Any], off: int, inf: Any, n: int, g: int) -> tuple[list[Any], int, Any, int]:
            """Window at grid eta*2^g: mass above the edge -> +inf, below -> up to the lower edge; then
            coarsen (rounding up) while longer than MAX_LEN. Returns (coeffs, offset, inf mass, g)."""
            tight = False
            while True:
                hi_g = hi_at(g)
                sd = math.sqrt(max(var1, 1e-300) * n)  # report
                lo_i = min(hi_g - 1, math.floor((mean1 * n - WINDOW_SD * sd) / (1 << g)) - 2)
                if tight:  # a too-long PLD: its top tail of mass <= TAIL_MASS * n / k also goes to +inf
                    budget = arb(fmpq(TAIL_MASS.numerator * n, TAIL_MASS.denominator * k))
                    acc = arb(0)
                    t = len(coeffs) - 1
                    while t > 0 and off + t > lo_i + 1 and (acc + coeffs[t]).upper() <= budget:
                        acc += coeffs[t]
                        t -= 1
                    hi_g = max(lo_i + 1, min(hi_g, off + t))
                below = arb(0)
                above = arb(0)
                keep = []
                for t, c in enumerate(coeffs):
                    i = off + t
                    if i < lo_i:
                        below += c
                    elif i > hi_g:
                        above += c
                    else:
                        keep.append((i, c))
                inf = inf + above
                if not keep:
                    return [below], lo_i, inf, g
                start = min(lo_i, keep[0][0]) if below.is_zero() else lo_i
                out = [arb(0)] * (keep[-1][0] - start + 1)
                for i, c in keep:
                    out[i - start] = c
                out[0] += below  # mass below the window moves up to its lower edge (pessimistic)
                if len(out) <= MAX_LEN or g >= MAX_COARSEN:  # the window's own width bounds g
                    return out, start, inf, g
                if not tight:  # first narrow the window to +-WINDOW_SD sd (mass above -> +inf), then coarsen
                    coeffs, off, tight = out, start, True
                    continue
                coeffs, off = coarsen(out, start)
                g += 1

        def to_grid(coeffs: list[Any], off: int, g: int, g_to: int) -> tuple[list[Any], int]:
            while g < g_to:
                coeffs, off = coarsen(coeffs, off)
                g += 1
            return coeffs, off

        def mul(a: list[Any], b: list[Any]) -> list[Any]:
            return list((arb_poly(a) * arb_poly(b)).coeffs()) or [arb(0)]

        inf1 = arb(fmpq(inf_mass.numerator, inf_mass.denominator))
        # binary powering: result = base^k, with windows (and grids) after every product
        res: tuple[list[Any], int, Any, int, int] | None = None  # (coeffs, offset, inf, n, g)
        cur = (base_c, lo, inf1, 1, g0)
        kk = k
        while kk:
            if kk & 1:
                if res is None:
                    res = cur
                else:
                    g = max(res[4], cur[4])
                    ra, ro = to_grid(res[0], res[1], res[4], g)
                    ca, co = to_grid(cur[0], cur[1], cur[4], g)
                    n = res[3] + cur[3]
                    c, o, inf, g = window(mul(ra, ca), ro + co, res[2] + cur[2], n, g)
                    res = (c, o, inf, n, g)
            kk >>= 1
            if kk:
                n = 2 * cur[3]
                c, o, inf, g = window(mul(cur[0], cur[0]), 2 * cur[1], 2 * cur[2], n, cur[4])
                cur = (c, o, inf, n, g)
        assert res is not None
        res_c, res_off, res_inf, _, res_g = res
        eps = arb(fmpq(epsilon.numerator, epsilon.denominator))
        step = e_arb * (1 << res_g)
        total = res_inf  # union bound for the infinite-loss atoms (each added, never multiplied away)
        for t, c in enumerate(res_c):
            i = res_off + t
            loss = i * step
            if (loss - eps).lower() > 0 or (loss - eps).overlaps(arb(0)):
                total += c * (1 - (eps - loss).exp()).max(arb(0))
        up = total.upper()
        man, ex = up.mid().man_exp()
        return min(Fraction(1), Fraction(int(man)) * Fraction(2) ** int(ex))
    finally:
        ctx.prec = old
