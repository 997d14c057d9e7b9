"""The four supported fields' moduli, as data: nothing here imports numpy or numba.

The release reader checks a compact release's recorded modulus against these (``dpspark inspect`` of a compact
release needs no GF arithmetic, so it must not pay for loading the compiled kernels).
"""

from __future__ import annotations

#: Supported degrees and the exponents of the modulus z^m + sum z^t.
MODULI: dict[int, tuple[int, ...]] = {
    64: (4, 3, 1, 0),
    128: (7, 2, 1, 0),
    192: (7, 2, 1, 0),
    256: (10, 5, 2, 0),
}

# The kernels' fast reduction assumes exactly three nonzero taps below 64 plus the constant term.
assert all(len(t) == 4 and t[3] == 0 and all(0 < x < 64 for x in t[:3]) for t in MODULI.values())


def modulus_int(m: int) -> int:
    """The modulus of GF(2^m) as an int (bit i = coefficient of z^i)."""
    if m not in MODULI:
        raise ValueError(f"unsupported field degree m={m}; supported: {sorted(MODULI)}")
    return (1 << m) | sum(1 << t for t in MODULI[m])


def modulus_string(m: int) -> str:
    """The modulus in galois's string syntax, e.g. 'x^128 + x^7 + x^2 + x + 1'."""
    terms = [m, *MODULI[m]] if m in MODULI else []
    if not terms:
        raise ValueError(f"unsupported field degree m={m}; supported: {sorted(MODULI)}")
    out = []
    for t in terms:
        out.append("1" if t == 0 else ("x" if t == 1 else f"x^{t}"))
    return " + ".join(out)
