"""Compile the numba kernels of dpspark.gf once, ahead of the first compact build or lookup.

numba compiles a kernel on its first call and stores the machine code in its
on-disk cache (``__pycache__`` next to the package, or ``NUMBA_CACHE_DIR``);
later processes load it in milliseconds. The first compact build in a fresh
install therefore compiles its kernels first (a build with the FFT: about 29 CPU s, measured with
scripts/bench/compile_profile.py on the 2-core dev VM; wall time grows with the machine's load), and says
so with the elapsed time (:func:`heartbeat`). Two ways keep that off the user's critical path:

* ``python -m dpspark.gf.warmup`` compiles everything into the cache (run it
  once after installing, e.g. in a container build step);
* :func:`ensure_compiled`, called at the start of every compact build and
  lookup batch, prints one progress line when the cache is missing and then
  compiles the kernels the build can run (its public l decides whether the FFT's are among them), half
  of them in a second process when a core is idle (:func:`compile_kernels`).

Only the compact mechanism imports this package: sparse, stability and dense
releases never import dpspark.gf or numba (a test checks this).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

_DONE = False

#: Entry kernels a compact build compiles (checked in numba's cache before the first build).
BUILD_KERNELS = frozenset({
    "count_zero_rows", "karatsuba_unreduced", "monic_level_lincomb",
    "monic_level_products", "monic_level_scaled", "monic_level_scaled_kara", "mul_arrays", "newton_unwrap", "reduce_rows",
    "school_unreduced", "sqr_arrays", "afft_forward_block", "afft_inverse_block",
})
#: Entry kernels of dpspark.gf.transposed_fft (large builds only; a lookup's check does not import that module).
TRANSPOSED_KERNELS = frozenset({"walk_block"})
#: Entry kernels a lookup compiles beyond those.
LOOKUP_KERNELS = frozenset({"horner_agg", "horner_agg_vec", "powers_table", "monic_divmod_school"})
#: The build kernels only products of at least poly.FFT_THRESHOLD coefficients run (additive FFT, its
#: transposed walk, the FFT Newton step).
FFT_KERNELS = frozenset({"afft_forward_block", "afft_inverse_block", "walk_block", "newton_unwrap"})

#: Every entry kernel of a build: (module, argument types) in the notation of :func:`_types` (A2: a writeable
#: C-contiguous (n, w) uint64 array, A1: a uint64 vector, L1: an int64 vector, i: int64, b: bool). These are
#: the one signature each kernel gets in a build (tests/unit/gf/test_firstuse_signatures.py checks the table
#: against a real build), so compiling them ahead gives the build's process cache hits only.
BUILD_SIGNATURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "count_zero_rows": ("kernels", ("A2",)),
    "mul_arrays": ("kernels", ("A2", "A2", "A1", "A2")),
    "sqr_arrays": ("kernels", ("A2", "A1", "A2")),
    "karatsuba_unreduced": ("polymul_kernels", ("A2", "A2", "A2", "i")),
    "school_unreduced": ("polymul_kernels", ("A2", "A2", "A2")),
    "reduce_rows": ("polymul_kernels", ("A2", "A1", "A2")),
    "monic_level_products": ("polymul_kernels", ("A2", "i", "i", "A1", "A2")),
    "monic_level_scaled": ("polymul_kernels", ("A2", "A2", "i", "i", "A1", "A2")),
    "monic_level_lincomb": ("polymul_kernels", ("A2", "A2", "i", "i", "A1", "A2")),
    "monic_level_scaled_kara": ("polymul_kernels", ("A2", "A2", "i", "i", "A1", "A2", "i", "i", "i")),
    "newton_unwrap": ("polymul_kernels", ("A2", "i", "i", "L1", "A2", "A2")),
    "afft_forward_block": ("additive_fft", ("A2", "i", "i", "A2", "L1", "A2", "L1", "A1", "i")),
    "afft_inverse_block": ("additive_fft", ("A2", "i", "i", "A2", "L1", "A2", "L1", "A1", "i")),
    "walk_block": ("transposed_fft", ("A2", "i", "i", "A2", "L1", "A1", "b", "i")),
}

#: Compile CPU of each entry kernel with its callees from an empty cache, in tenths of a second (numba's
#: "numba:compile" events: scripts/bench/compile_profile.py on the 2-core dev VM, numba 0.68, issue 35 §1);
#: only their ratios matter: they balance the two processes of :func:`compile_kernels`.
COMPILE_DECISECONDS = {
    "walk_block": 66, "afft_forward_block": 47, "afft_inverse_block": 45, "monic_level_scaled_kara": 41,
    "monic_level_products": 17, "karatsuba_unreduced": 16, "mul_arrays": 11, "monic_level_lincomb": 9,
    "monic_level_scaled": 8, "sqr_arrays": 6, "newton_unwrap": 5, "school_unreduced": 4,
    "reduce_rows": 2, "count_zero_rows": 2,
}


def build_kernels(coefficients: int | None = None) -> frozenset[str]:
    """The entry kernels a build of a polynomial with ``coefficients`` (l, public) coefficients can run.

    With l <= FFT_THRESHOLD no product or evaluation reaches the FFT whatever |S| < l is (every size of the
    tree, its evaluation and the final product stays below FFT_THRESHOLD; one coefficient more and a build
    of |S| = l - 1 points runs the FFT: tests/unit/gf/test_firstuse_signatures.py checks both sides). The
    choice depends on l alone (public), never on the data; a kernel it left out would still compile on its
    first call (numba's default), which costs time, never a wrong result.
    """
    from dpspark.gf.poly import FFT_THRESHOLD

    names = BUILD_KERNELS | TRANSPOSED_KERNELS
    if coefficients is not None and coefficients <= FFT_THRESHOLD:
        names -= FFT_KERNELS
    return frozenset(names)


def split_for_two(names: frozenset[str]) -> tuple[list[str], list[str]]:
    """(own, helper): ``names`` in two parts of about equal compile CPU (largest first, to the lighter part)."""
    parts: tuple[list[str], list[str]] = ([], [])
    load = [0, 0]
    for name in sorted(names, key=lambda x: (-COMPILE_DECISECONDS.get(x, 10), x)):
        side = 0 if load[0] <= load[1] else 1
        parts[side].append(name)
        load[side] += COMPILE_DECISECONDS.get(name, 10)
    return parts


def _types(code: str) -> object:
    """The numba type of one argument code of :data:`BUILD_SIGNATURES`."""
    from numba import types

    return {"A2": types.Array(types.uint64, 2, "C"), "A1": types.Array(types.uint64, 1, "C"),
            "L1": types.Array(types.int64, 1, "C"), "i": types.int64, "b": types.boolean}[code]


def compile_named(names: list[str]) -> None:
    """Compile (or load from numba's cache) the build kernels ``names`` for their one build signature."""
    import importlib

    for name in names:  # a fixed list
        module, args = BUILD_SIGNATURES[name]
        disp = getattr(importlib.import_module(f"dpspark.gf.{module}"), name)
        disp.compile(tuple(_types(a) for a in args))


def _kernel_modules(names: frozenset[str] | None = None) -> list[ModuleType]:
    from dpspark.gf import additive_fft, horner_kernels, kernels, polymul_kernels

    mods = [kernels, polymul_kernels, horner_kernels, additive_fft]
    if names is None or names & TRANSPOSED_KERNELS:
        from dpspark.gf import transposed_fft

        mods.append(transposed_fft)
    return mods


def _entry_dispatchers(names: frozenset[str] | None = None) -> list[object]:
    """The cached numba dispatchers called from Python (inline-only helpers are never compiled alone)."""
    from numba.core.registry import CPUDispatcher

    out = []
    for mod in _kernel_modules(names):
        for name in dir(mod):
            obj = getattr(mod, name)
            if isinstance(obj, CPUDispatcher) and obj.__module__ == mod.__name__:
                if obj.targetoptions.get("inline", "never") == "always":
                    continue
                out.append(obj)
    return out


def cache_missing(names: frozenset[str] | None = None) -> bool:
    """True when a kernel (of ``names``; default all) has no up-to-date entry in numba's on-disk cache, or there is no cache."""
    from dpspark.gf.clmul import CACHE

    if not CACHE:
        return True
    for disp in _entry_dispatchers(names):
        if names is not None and disp.__name__ not in names:  # type: ignore[attr-defined]
            continue
        cache = getattr(disp, "_cache", None)
        cache_file = getattr(cache, "_cache_file", None)
        index = getattr(cache_file, "_index_path", None)
        if index is None:
            return True
        try:
            src = sys.modules[disp.__module__].__file__  # type: ignore[attr-defined]
            if not os.path.exists(index) or (src and os.path.getmtime(index) < os.path.getmtime(src)):
                return True
        except OSError:
            return True
    return False


def compile_build() -> float:
    """Run the kernels of a compact build once on small inputs (compiling or loading them); wall seconds."""
    import numpy as np

    from dpspark.gf import GF2m, poly_derivative
    from dpspark.gf.poly import FFT_THRESHOLD
    from dpspark.gf.subproduct import SubproductTree

    t0 = time.perf_counter()
    field = GF2m(128)
    n = 2 * FFT_THRESHOLD + 3  # large enough for the FFT and Newton paths of every tree phase
    pts = np.zeros((n, field.w), np.uint64)
    pts[:, 0] = np.arange(1, n + 1, dtype=np.uint64)
    tree = SubproductTree(field, pts)
    weights = tree.evaluate(poly_derivative(field, tree.root()))
    tree.linear_combination(field.mul(pts, field.inv(weights)))
    return time.perf_counter() - t0  # report


def start_helper(names: list[str]) -> subprocess.Popen[bytes] | None:
    """A second process compiling the build kernels ``names`` into the same cache; None without an idle core.

    numba compiles on one core while holding the GIL, so a second core only helps from another process.
    numba writes each cache file to a temporary name and renames it, so the two processes never see a
    half-written entry. The helper imports this same dpspark (PYTHONPATH) and cache (environment).
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    if cpus < 2 or os.getloadavg()[0] > cpus - 1:
        # no idle core: the two processes would share one and only add the helper's start-up (measured:
        # 79 s wall for 79 s of CPU at load 1.5-2.8 on 2 cores, against 88 s for 86 s without a helper)
        return None
    import dpspark

    env = dict(os.environ)
    root = str(Path(dpspark.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    try:
        return subprocess.Popen([sys.executable, "-m", "dpspark.gf.warmup", "--helper", *names], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None


def compile_kernels(names: frozenset[str]) -> tuple[float, float, int]:
    """Compile the build kernels ``names`` on two cores when one is idle (:func:`start_helper`).

    Returns (wall seconds, CPU seconds of this process and the helper, processes that compiled).

    This process compiles its half while the helper compiles the other into the cache; then it waits for the
    helper and loads that half (milliseconds). A kernel the helper did not store (it failed or was not
    started) is compiled here, so the result never depends on the helper.
    """
    import resource

    t0, cpu0 = time.perf_counter(), time.process_time()
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    own, other = split_for_two(names)
    helper = start_helper(other)
    processes = 1 if helper is None else 2
    try:
        compile_named(own)
        if helper is not None:
            helper.wait()
            helper = None
        compile_named(other)
    finally:
        if helper is not None:  # this process failed or was interrupted: stop the helper too
            helper.terminate()
            helper.wait()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (time.process_time() - cpu0 + children.ru_utime - children0.ru_utime  # report
           + children.ru_stime - children0.ru_stime)  # report
    return time.perf_counter() - t0, cpu, processes  # report


def compile_lookup() -> float:
    """Run the lookup kernels (Horner paths, multipoint evaluation) once; wall seconds."""
    import numpy as np

    from dpspark.gf import GF2m, horner, horner_many, multipoint_eval

    t0 = time.perf_counter()
    f = GF2m(128)
    for c in (np.ones((70, f.w), np.uint64), _read_only(np.ones((70, f.w), np.uint64))):
        # the lookup library hands the coefficients over read-only (a memory map): numba types a read-only
        # array apart from a writable one, so each path is compiled for both
        for m in (64, 128, 192, 256):  # one kernel serves every m; the vector kernel has a branch per width
            g = GF2m(m)
            cg = np.ones((70, g.w), np.uint64)
            if not c.flags.writeable:
                cg = _read_only(cg)
            horner(g, cg, np.ones(g.w, np.uint64))
            horner_many(g, cg, np.ones((3, g.w), np.uint64))
        multipoint_eval(f, c, np.ones((5, f.w), np.uint64) ^ np.arange(5, dtype=np.uint64)[:, None])
    return time.perf_counter() - t0  # report


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a`` made read-only in place (the flag numba types apart)."""
    a.setflags(write=False)
    return a


def compile_all() -> float:
    """Every kernel path a compact build or lookup uses, plus the reference paths; wall seconds."""
    import numpy as np

    from dpspark.gf import GF2m, horner, horner_many

    secs = compile_build() + compile_lookup()
    t0 = time.perf_counter()
    f = GF2m(128)
    c = np.ones((70, f.w), np.uint64)
    for coeffs in (c, _read_only(c.copy())):  # writable and read-only coefficients, as in compile_lookup
        for method in ("clmul", "table"):
            horner(f, coeffs, c[0], method)
            horner(f, coeffs[:40], c[0], method)
        horner_many(f, coeffs, c[:3], "generic")
    # GF2m.mul hands the kernel read-only broadcast views: both operands when the shapes agree, the first
    # when the second is broadcast (then copied)
    f.mul(c[:2], c[:2])
    f.mul(c[:2], c[0])
    f.pow(c[:2], 5)
    f.mul_fixed(f.mul_table(c[0]), c[:2])
    f.square(c[:2])
    return secs + time.perf_counter() - t0  # report


#: Seconds between two "still compiling" lines.
HEARTBEAT_SECONDS = 30.0


@contextlib.contextmanager
def heartbeat(say: Callable[[str], None], what: str, every: float = HEARTBEAT_SECONDS) -> Iterator[None]:
    """While the block runs, say every ``every`` seconds what is running and the elapsed time.

    The compile is CPU-bound, so its duration depends on the machine's load (65 s quiet, 580-625 s at load
    15-22, issue 35): the lines report measured time and promise none.
    """
    stop = threading.Event()
    t0 = time.monotonic()

    def beat() -> None:
        while not stop.wait(every):
            say(f"dpspark: still {what}: {time.monotonic() - t0:.0f} s elapsed")  # report

    thread = threading.Thread(target=beat, name="dpspark-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def ensure_compiled(progress: Callable[[str], None] | None = None, compile_now: bool = True,
                    coefficients: int | None = None) -> None:
    """Once per process: if numba's cache lacks a kernel, print one line and (``compile_now``) compile all.

    Without a usable cache (or with ``compile_now`` False, as for a lookup that
    needs only a few kernels) it only prints the line; the kernels then compile
    lazily on their first call. ``coefficients``: the build's public l, which leaves the FFT kernels out of
    small builds (:func:`build_kernels`).
    """
    global _DONE
    if _DONE:
        return
    _DONE = True
    names = build_kernels(coefficients) if compile_now else BUILD_KERNELS | LOOKUP_KERNELS
    if os.environ.get("DPSPARK_GF_SKIP_WARMUP", "") not in ("", "0") or not cache_missing(names):
        return
    say = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    from dpspark.gf.clmul import CACHE

    if not CACHE:
        say("dpspark: compiling the GF(2^m) kernels (numba has no writable cache here, so every process compiles them)")
        return
    if not compile_now:
        say("dpspark: compiling the GF(2^m) lookup kernels on first use (later runs with this numba cache load them)")
        return
    say(f"dpspark: compiling {len(names)} GF(2^m) kernels into numba's cache (later runs with this cache load them)")
    with heartbeat(say, "compiling the GF(2^m) kernels"):
        wall, cpu, processes = compile_kernels(names)
    # measured figures only: the compile's wall time depends on the machine's load
    say(f"dpspark: kernels ready after {wall:.0f} s ({cpu:.0f} CPU s in {processes} "  # report
        + ("processes)" if processes > 1 else "process)"))


def main(argv: list[str] | None = None) -> None:
    """``python -m dpspark.gf.warmup``: compile all kernels into numba's cache now (``--build``: only a
    compact build's; ``--helper``: only the build kernels named, the second process of :func:`compile_kernels`)."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--helper"] and set(args[1:]) <= set(BUILD_SIGNATURES):
        compile_named(args[1:])
        return
    if args not in ([], ["--build"]):
        raise SystemExit("usage: python -m dpspark.gf.warmup [--build | --helper KERNEL...]")
    names = build_kernels()
    missing = cache_missing(names if args else None)
    # the build kernels first, on two cores when one is idle; compile_all then loads them and compiles the rest
    wall, cpu, processes = compile_kernels(names) if missing else (0.0, 0.0, 1)
    if not args:
        t0 = time.perf_counter()
        compile_all()
        wall += time.perf_counter() - t0  # report
    state = "compiled" if missing else "already cached; loaded"
    # the reference-only kernels (the remainder tree's) are not warmed: usable = every kernel a build or lookup needs
    usable = not cache_missing(names if args else BUILD_KERNELS | TRANSPOSED_KERNELS | LOOKUP_KERNELS)
    print(f"dpspark.gf {'build ' if args else ''}kernels {state} in {wall:.1f} s"  # report
          + (f" (build kernels: {cpu:.1f} CPU s in {processes} process{'es' if processes > 1 else ''})"  # report
             if missing else "")
          + f"; cache usable: {usable}")


if __name__ == "__main__":
    main()
