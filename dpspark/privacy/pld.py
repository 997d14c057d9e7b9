"""Certified privacy-loss-distribution (PLD) composition of known laws: an upper bound on delta(epsilon).

**Laws** (each a dominating pair (P, Q): every mechanism the law describes, on every pair of neighbours, has
a trade-off curve at least that of (P, Q), and (Q, P) has the same PLD by symmetry):

* ``pure(eps)``: randomized response, the worst eps-DP pair (Kairouz-Oh-Viswanath 2015; Dong-Roth-Su
  2022, Sec. 2): L = +eps with mass e^eps / (1 + e^eps), else -eps. Valid for *any* eps-DP release.
* ``approx(eps, delta)``: the worst (eps, delta)-DP pair (same references): L = +inf with mass delta, then
  randomized response at eps with mass 1 - delta. Valid for any (eps, delta)-DP release.
* ``geometric(x, Delta)``: the two-sided geometric law P(k) ~ x^-|k| (x = e^(1/scale) > 1 rational) against its
  shift by the integer sensitivity Delta: masses exact rationals, L = j ln x. A clamped output is
  post-processing. Log-concave, so the shift Delta dominates every smaller one.
* ``discrete_gaussian(sigma2, Delta)``: N_Z(0, sigma2) (sigma2 rational) against its shift by Delta:
  L(k) = (Delta^2 - 2 k Delta) / (2 sigma2), exact rationals; masses arb balls; the two tails beyond a public
  K carry a certified upper bound of mass to the +inf atom. Log-concave, as above. This is the *ideal* law:
  it describes a release only when the release's implemented noise is that law (a caller's claim).

**Composition.** The PLD of a product of pairs is the convolution of their PLDs, and dominating pairs compose
under adaptive composition when every release's law is fixed in advance (Zhu-Dong-Wang 2022;
Dong-Roth-Su 2022, Thm 3.2). delta(eps) = E[(1 - e^(eps - L))_+] + P(L = +inf) (Koskela et al. 2020; DK 10.1).
So this is a statement of a sequence whose parameters were fixed in advance; it is not a filter, and the
ledger never admits a release by it (docs/accounting.md).

**Certified (pessimistic) discretisation.** Every finite loss is put on a grid of step eta, rounded **up**
(exact when the losses are rational multiples of eta: pure and approx with rational eps, the discrete Gaussian
with the gcd grid); every mass is an arb ball (exact rationals where they are); after each product the mass
above a public top goes to +inf and the mass below a public floor moves **up** to the floor; delta(eps) is
evaluated in arb and its upper end is taken. Raising a loss only raises (1 - e^(eps - L))_+, so each step
can only overstate delta. Floats only place the windows and the grid (any placement is sound).

Google's dp_accounting uses the same pessimistic idea (losses rounded up, mass moved toward larger losses),
but computes masses and convolutions in float64 (FFT): sound in exact arithmetic, not certified as run.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import reduce
from math import gcd
from typing import Any, Iterable, Optional

from dpspark.privacy.errors import PrivacyError

LAWS = ("pure", "approx", "geometric", "discrete_gaussian")
#: longest PLD polynomial (bins); a finer grid is coarsened by rounding every loss up
MAX_BINS = 1 << 16
#: the discrete Gaussian's support is cut at a K whose two tails weigh at most ~2^-TAIL_BITS (certified bound)
TAIL_BITS = 90
PREC = 160
#: losses above eps_hi + TOP_MARGIN go to +inf: overstating delta(eps) by at most P(L > top) e^(eps - top)
TOP_MARGIN = Fraction(4)
#: round off-grid losses up (True, certified); tests flip it to show the exact check catches a round-down
_ROUND_UP = True
#: masses are integers in units of 2^-MASS_BITS, each rounded up
MASS_BITS = 128
#: largest bias of one law, and of a composition's summed biases (the fold below needs sum <= 1/4)
MAX_BIAS = Fraction(1, 4)


def bias_fold(laws: list[Law]) -> tuple[Fraction, Fraction]:
    """(F, B) with delta'(eps) <= F * delta(eps - B) for the composition of ``laws`` as implemented (delta'),
    delta that of their ideal laws. Why: each release's implemented P_i' <= (1 + a_i) P_i and
    Q_i' >= (1 - a_i) Q_i pointwise (also conditionally, so for the adaptive product with parameters fixed in
    advance), hence sum_o (P'(o) - e^eps Q'(o))_+ <= prod(1 + a_i) sum_o (P(o) - e^(eps - B) Q(o))_+ with
    B >= sum ln((1 + a_i)/(1 - a_i)). Bounds used (S = sum a_i <= 1/4): prod(1 + a_i) <= e^S <= 1 + 2S, and
    ln((1 + a)/(1 - a)) <= 2a/(1 - a) <= 4a for a <= 1/2, so F = 1 + 2S and B = 4S (exact rationals)."""
    total = sum((law.bias * law.copies for law in laws), Fraction(0))
    if total > MAX_BIAS:
        raise PrivacyError(f"the laws' biases sum to {total} > {MAX_BIAS}: the bias fold needs at most {MAX_BIAS}")
    return 1 + 2 * total, 4 * total


@dataclass(frozen=True)
class Law:
    """A privacy-loss law: ``kind`` in :data:`LAWS` and its exact parameters."""

    kind: str
    params: tuple[Fraction, ...]
    #: the implemented law's deviation: every output probability, on both sides, lies within a factor
    #: [1 - bias, 1 + bias] of this law's (e.g. a mod-d uniform draw's 2^-lambda; 0: the law is exact)
    bias: Fraction = Fraction(0)
    #: one release's pair is the product of this many independent copies (e.g. k keys a unit moves)
    copies: int = 1

    def text(self) -> str:
        """JSON, exact strings (what the ledger stores); ``bias`` and ``copies`` only when not 0 and 1."""
        names = _PARAMS[self.kind]
        extra = {"bias": str(self.bias)} if self.bias else {}
        if self.copies != 1:
            extra["copies"] = str(self.copies)
        return json.dumps({"law": self.kind, **{n: str(v) for n, v in zip(names, self.params)}, **extra},
                          sort_keys=True)

    def ideal(self) -> "Law":
        """The same law without its bias."""
        return Law(self.kind, self.params)

    def single(self) -> "Law":
        """One copy (the product of ``copies`` of them is this law)."""
        return Law(self.kind, self.params, self.bias)


def expand(laws: Iterable[Law]) -> list[Law]:
    """Every law as its copies (a product of pairs composes as its factors)."""
    return [one for law in laws for one in [law.single()] * law.copies]


_PARAMS = {"pure": ("epsilon",), "approx": ("epsilon", "delta"), "geometric": ("base", "sensitivity"),
           "discrete_gaussian": ("sigma2", "sensitivity")}


def parse_law(obj: Any) -> Law:
    """A law from its JSON text or mapping; exact values only (a float is refused)."""
    if isinstance(obj, Law):
        return obj
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except ValueError:
            raise PrivacyError("a noise law is JSON text") from None
    if not isinstance(obj, dict) or obj.get("law") not in LAWS:
        raise PrivacyError(f"a noise law is {{'law': one of {', '.join(LAWS)}, ...}}")
    kind = obj["law"]
    names = _PARAMS[kind]
    if set(obj) - {"bias", "copies"} != {"law", *names}:
        raise PrivacyError(f"a {kind} law has exactly the parameters {', '.join(names)} (and optional bias, "
                           "copies)")
    copies = obj.get("copies", 1)
    if isinstance(copies, bool) or not isinstance(copies, (int, str)) or not str(copies).isdigit() \
            or not 1 <= int(copies) <= 1 << 20:
        raise PrivacyError("a law's copies is an integer in [1, 2^20]")
    vals = []
    for n in (*names, "bias"):
        v = obj.get(n, 0)
        if isinstance(v, float) or not isinstance(v, (str, int, Fraction)):
            raise TypeError(f"noise law parameter {n} must be exact (str, int or Fraction), not {type(v).__name__}")
        vals.append(Fraction(v))
    law = Law(kind, tuple(vals[:-1]), vals[-1], int(copies))
    _check(law)
    return law


def _check(law: Law) -> None:
    p = law.params
    if not 0 <= law.bias <= MAX_BIAS:
        raise PrivacyError(f"a law's bias lies in [0, {MAX_BIAS}]")
    if law.kind == "pure" and not p[0] > 0:
        raise PrivacyError("a pure law needs epsilon > 0")
    if law.kind == "approx" and not (p[0] >= 0 and 0 < p[1] < 1):
        raise PrivacyError("an approx law needs epsilon >= 0 and 0 < delta < 1")
    if law.kind in ("geometric", "discrete_gaussian"):
        if p[1].denominator != 1 or not 1 <= p[1] <= 1 << 20:
            raise PrivacyError(f"a {law.kind} law needs an integer sensitivity in [1, 2^20]")
        if law.kind == "geometric" and not p[0] > 1:
            raise PrivacyError("a geometric law needs base = e^(1/scale) > 1")
        if law.kind == "discrete_gaussian" and not Fraction(1, 100) <= p[0] <= 10**12:
            raise PrivacyError("a discrete_gaussian law needs 1/100 <= sigma2 <= 10^12")


def _arbq(x: Fraction) -> Any:
    from flint import arb, fmpq

    return arb(fmpq(x.numerator, x.denominator))


def _atoms(law: Law) -> tuple[list[tuple[Optional[Fraction], Any, Any]], Any]:
    """(exact loss or None, loss ball, mass ball) of every finite atom, and the +inf mass (ball)."""
    from flint import arb

    if law.kind in ("pure", "approx"):
        eps = law.params[0]
        d = law.params[1] if law.kind == "approx" else Fraction(0)
        x = _arbq(eps).exp()
        keep = 1 - _arbq(d)
        return [(eps, _arbq(eps), keep * x / (1 + x)), (-eps, -_arbq(eps), keep / (1 + x))], _arbq(d)
    if law.kind == "geometric":
        base, s = law.params[0], int(law.params[1])
        r = 1 / base
        lam = _arbq(base).log()
        out = [(None, s * lam, _arbq(1 / (1 + r))), (None, -s * lam, _arbq(r ** s / (1 + r)))]
        c = (1 - r) / (1 + r)
        out += [(None, (s - 2 * k) * lam, _arbq(c * r ** k)) for k in range(1, s)]
        return out, arb(0)
    sigma2, s = law.params[0], int(law.params[1])
    sd = math.sqrt(float(sigma2))  # report (public placement of K; the tail bound below is certified)
    K = int(math.ceil(sd * math.sqrt(2 * TAIL_BITS * math.log(2)))) + s + 1
    two_s2 = 2 * sigma2
    w = {k: (-_arbq(Fraction(k * k) / two_s2)).exp() for k in range(-K, K + 1)}
    head = sum(w.values(), arb(0))
    # sum_{k > K} e^{-k^2/(2 sigma2)} <= term(K+1) / (1 - e^{-(2K+3)/(2 sigma2)}), both sides
    tail = 2 * (-_arbq(Fraction((K + 1) ** 2) / two_s2)).exp() / (1 - (-_arbq(Fraction(2 * K + 3) / two_s2)).exp())
    z = head + arb(0).union(tail)  # a ball holding the true normaliser
    out = []
    for k, wk in w.items():
        loss = Fraction(s * s - 2 * k * s) / two_s2
        out.append((loss, _arbq(loss), wk / z))
    return out, tail / head  # the tails' mass, an upper bound (head <= z)


@dataclass(frozen=True)
class PLDStatement:
    """epsilon at delta by PLD, the grid step and what was composed (counts per law)."""

    epsilon: Fraction
    delta: Fraction
    eta: Fraction
    exact_grid: bool  # every loss was on the grid (no rounding)
    laws: tuple[tuple[str, int], ...]


def _frac_gcd(xs: list[Fraction]) -> Fraction:
    nums = reduce(gcd, (x.numerator for x in xs))
    dens = reduce(lambda a, b: a * b // gcd(a, b), (x.denominator for x in xs))
    return Fraction(nums, dens)


#: windows span the partial composition's mean -/+ WINDOW_SD standard deviations (placement only: any window
#: is sound, mass outside it moves up or to +inf)
WINDOW_SD = 12

Pld = tuple  # (coeffs: list[int], offset: int, inf: int, mean: float, var: float)


class _Composer:
    """PLDs as integer polynomials: coefficient t is an upper bound on the mass at loss (off + t) eta, in units of
    2^-MASS_BITS (rounded UP from the arb ball); the +inf mass likewise. Products of upper bounds of
    non-negative masses bound the product's masses from above; after each product the coefficients are
    divided by 2^MASS_BITS rounding UP. So every coefficient stays an upper bound (fmpz_poly: exact, fast).

    Windows: a partial composition with (float) mean m and variance v, of a whole with mean M and variance V,
    keeps losses in [m - c sqrt(v), top - (M - m) + c sqrt(V - v)]: mass below moves UP to the lower edge, mass
    above goes to +inf. Floats only place the window; both moves only raise losses (sound at any placement).
    """

    def __init__(self, groups: list[tuple[Law, int]], top: Fraction, max_bins: int) -> None:
        self.groups = groups
        atoms = {law: _atoms(law) for law, _ in groups}
        self.atoms = atoms
        self.moments = {}
        for law, (fin, _) in atoms.items():
            m1 = sum(float(m.mid()) * float(l.mid()) for _, l, m in fin)  # report (placement)
            m2 = sum(float(m.mid()) * float(l.mid()) ** 2 for _, l, m in fin)  # report (placement)
            self.moments[law] = (m1, max(m2 - m1 * m1, 0.0))
        self.M = sum(self.moments[law][0] * k for law, k in groups)  # report (placement)
        self.V = sum(self.moments[law][1] * k for law, k in groups)  # report (placement)
        self.top = float(top)  # report (placement)
        rational = [abs(l) for law in atoms for l, _, _ in atoms[law][0] if l is not None and l != 0]
        exact = all(l is not None for law in atoms for l, _, _ in atoms[law][0])
        width = Fraction(math.ceil(self.top + 2 * WINDOW_SD * math.sqrt(self.V)) + 2)  # report (placement)
        need = width / (max_bins - 2)  # the smallest step that fits every window
        eta = _frac_gcd(rational) if rational else need
        if eta < need:
            eta = eta * math.ceil(need / eta)
            exact = False
        self.exact = exact and all(
            (l / eta).denominator == 1 for law in atoms for l, _, _ in atoms[law][0] if l is not None)
        self.eta = eta
        self.max_bins = max_bins

    @staticmethod
    def _units(x: Any) -> int:
        """ceil(upper(x) * 2^MASS_BITS), at least 0."""
        up = _up(x) * (1 << MASS_BITS)
        return max(0, -((-up.numerator) // up.denominator))

    def base(self, law: Law) -> Pld:
        fin, inf = self.atoms[law]
        idx: dict[int, int] = {}
        e = _arbq(self.eta)
        for exact_loss, loss, mass in fin:
            if exact_loss is not None and (exact_loss / self.eta).denominator == 1:
                i = int(exact_loss / self.eta)
            elif _ROUND_UP:
                i = int((loss / e).upper().ceil().unique_fmpz())  # rounded UP
            else:  # pragma: no cover - mutant for tests only: rounds losses DOWN
                i = int((loss / e).lower().floor().unique_fmpz())
            idx[i] = idx.get(i, 0) + self._units(mass)
        return self.window(idx, self._units(inf), *self.moments[law])

    def window(self, idx: dict[int, int], inf: int, mean: float, var: float) -> Pld:
        eta = float(self.eta)  # report (placement)
        c = WINDOW_SD
        lo = math.floor((mean - c * math.sqrt(var)) / eta) - 1  # report (placement: any lo is sound)
        hi = math.ceil((self.top - (self.M - mean) + c * math.sqrt(max(self.V - var, 0.0))) / eta) + 1  # report
        hi = max(hi, lo + 1)
        if hi - lo + 1 > self.max_bins:  # the grid was sized for this; keep the top of the window
            lo = hi - self.max_bins + 1
        below = 0
        keep: dict[int, int] = {}
        for i, m in idx.items():
            if not m:
                continue
            if i > hi:
                inf += m
            elif i < lo:
                below += m
            else:
                keep[i] = m
        if below:
            keep[lo] = keep.get(lo, 0) + below  # moved UP to the lower edge
        if not keep:
            return [0], lo, inf, mean, var
        off = min(keep)
        return [keep.get(i, 0) for i in range(off, max(keep) + 1)], off, inf, mean, var

    def mul(self, a: Pld, b: Pld) -> Pld:
        from flint import fmpz_poly

        prod = fmpz_poly(a[0]) * fmpz_poly(b[0])
        shift = MASS_BITS
        coeffs = [-((-int(c)) >> shift) for c in prod.coeffs()]  # / 2^MASS_BITS, rounded UP
        total_a = sum(a[0]) + a[2]
        total_b = sum(b[0]) + b[2]
        # inf mass of the product: P_a(inf) + P_b(inf) (union bound) scaled by the other factor's total (<= ~1)
        inf = -((-(a[2] * total_b + b[2] * total_a)) >> shift)
        off = a[1] + b[1]
        return self.window({off + t: c for t, c in enumerate(coeffs)}, inf, a[3] + b[3], a[4] + b[4])

    def power(self, base: Pld, k: int) -> Pld:
        res = None
        cur = base
        while k:
            if k & 1:
                res = cur if res is None else self.mul(res, cur)
            k >>= 1
            if k:
                cur = self.mul(cur, cur)
        assert res is not None
        return res

    def compose(self) -> Pld:
        out = None
        for law, k in self.groups:
            p = self.power(self.base(law), k)
            out = p if out is None else self.mul(out, p)
        assert out is not None
        return out


class _Tail:
    """Suffix sums of a discretised PLD: delta(eps) = P(inf) + sum_{L > eps} m_L - e^eps sum_{L > eps} m_L e^-L,
    each an arb ball, so every epsilon costs O(1) after one pass."""

    def __init__(self, pld: tuple[list[Any], int, Any], eta: Fraction) -> None:
        from flint import arb

        coeffs, self.off, inf = pld[0], pld[1], pld[2]
        self.eta = eta
        unit = _arbq(Fraction(1, 1 << MASS_BITS))
        self.inf = inf * unit
        step = _arbq(eta)
        n = len(coeffs)
        self.a = [arb(0)] * (n + 1)
        self.b = [arb(0)] * (n + 1)
        acc = 0
        for t in range(n - 1, -1, -1):
            acc += coeffs[t]
            self.a[t] = acc * unit
            self.b[t] = self.b[t + 1] + (coeffs[t] * unit) * (-(self.off + t) * step).exp() if coeffs[t] else self.b[t + 1]

    def delta(self, eps: Fraction) -> Any:
        """delta(eps), an arb ball whose upper end is certified."""
        q = eps / self.eta
        first = min(max(0, math.floor(q) + 1 - self.off), len(self.a) - 1)  # the first loss > eps
        return self.inf + self.a[first] - _arbq(eps).exp() * self.b[first]


def _delta_upper(pld: tuple[list[Any], int, Any], eta: Fraction, eps: Fraction) -> Any:
    """delta(eps) of the discretised PLD, an arb ball (upper end certified)."""
    return _Tail(pld, eta).delta(eps)


def _up(x: Any) -> Fraction:
    man, ex = x.upper().mid().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(ex)


def pld_epsilon(laws: Iterable[Law], delta: Fraction, eps_hi: Fraction, *, max_bins: int = MAX_BINS,
                steps: int = 30) -> Optional[PLDStatement]:
    """The least epsilon on a bisection grid in [0, eps_hi] whose certified delta(epsilon) <= ``delta``, composed
    by PLD over ``laws``; None when even eps_hi does not reach ``delta`` (the caller keeps its other bound)."""
    from flint import ctx

    if not 0 < delta < 1 or eps_hi <= 0:
        raise PrivacyError("PLD composition needs 0 < delta < 1 and an upper bound eps_hi > 0")
    laws = expand(laws)
    fold, shift = bias_fold(laws)
    if shift:  # the implemented laws: the ideal ones' epsilon at delta / F, plus B (:func:`bias_fold`)
        got = pld_epsilon([law.ideal() for law in laws], delta / fold, eps_hi, max_bins=max_bins, steps=steps)
        if got is None:
            return None
        texts: dict[str, int] = {}
        for law in laws:
            texts[law.text()] = texts.get(law.text(), 0) + 1
        return PLDStatement(got.epsilon + shift, delta, got.eta, got.exact_grid, tuple(sorted(texts.items())))
    counts: dict[Law, int] = {}
    for law in laws:
        counts[law] = counts.get(law, 0) + 1
    if not counts:
        return PLDStatement(Fraction(0), Fraction(0), Fraction(1), True, ())
    groups = sorted(counts.items(), key=lambda kv: (kv[0].kind, kv[0].params))
    old = ctx.prec
    ctx.prec = PREC
    try:
        comp = _Composer(groups, eps_hi + TOP_MARGIN, max_bins)
        tail = _Tail(comp.compose(), comp.eta)
        if _up(tail.delta(eps_hi)) > delta:
            return None
        lo, hi = Fraction(0), eps_hi
        for _ in range(steps):
            mid = (lo + hi) / 2
            mid = Fraction(math.ceil(mid * (1 << 24)), 1 << 24)
            if mid >= hi:
                break
            if _up(tail.delta(mid)) <= delta:
                hi = mid
            else:
                lo = mid
        return PLDStatement(hi, delta, comp.eta, comp.exact,
                            tuple((law.text(), k) for law, k in groups))
    finally:
        ctx.prec = old


def delta_at(laws: Iterable[Law], epsilon: Fraction, *, top: Optional[Fraction] = None,
             max_bins: int = MAX_BINS) -> Fraction:
    """A certified upper bound on delta(``epsilon``) of the composition of ``laws`` (for tests)."""
    from flint import ctx

    laws = expand(laws)
    fold, shift = bias_fold(laws)
    if shift:
        return min(Fraction(1), fold * delta_at([law.ideal() for law in laws], epsilon - shift, top=top,
                                                max_bins=max_bins))

    counts: dict[Law, int] = {}
    for law in laws:
        counts[law] = counts.get(law, 0) + 1
    old = ctx.prec
    ctx.prec = PREC
    try:
        comp = _Composer(sorted(counts.items(), key=lambda kv: (kv[0].kind, kv[0].params)),
                         top if top is not None else epsilon + 40, max_bins)
        return min(Fraction(1), _up(_delta_upper(comp.compose(), comp.eta, epsilon)))
    finally:
        ctx.prec = old
