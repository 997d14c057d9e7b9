"""The backend protocol (issue 21 section 2): nothing probes a backend, and engine support is derived.

* no ``hasattr``/``getattr`` on a backend or a context anywhere in ``dpspark/`` (a grep; the mutant test
  plants such a line and shows the grep catches it);
* ``supported_engines`` follows the stage types a mechanism declares: Spark-only family stages give
  ("spark",), counts give both, and a toy stage without an Arrow kernel makes a mechanism Spark-only;
* the Arrow and Spark backends find the same kernels from the same stage types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dpspark.engine.backend import (ENGINES, KernelMissingError, input_reads, kernel_path, open_backend,
                                    supported_engines)
from dpspark.engine.stages import CountsStage, FamilyStage, OuterProductStage, SumsStage
from dpspark.mechanisms.base import StageInfo
from dpspark.mechanisms.registry import construct

ROOT = Path(__file__).resolve().parents[3] / "dpspark"
#: hasattr/getattr whose object names a backend or a stage context (ctx, context, backend, ...)
PROBE = re.compile(r"\b(hasattr|getattr)\(\s*(self\.)?\w*(ctx|context|backend)\w*\s*,", re.IGNORECASE)


def probes(root: Path) -> list[str]:
    """Every ``path:line`` under ``root`` that probes a backend or a context with hasattr/getattr."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PROBE.search(line):
                out.append(f"{path.relative_to(root.parent)}:{n}: {line.strip()}")
    return out


def test_no_backend_is_probed() -> None:
    assert probes(ROOT) == []


@pytest.mark.parametrize("line", ['    if hasattr(ctx, "df"):', '    own = getattr(ctx, "batch_secret", None)',
                                  "    n = getattr(backend, 'passes_run', 0)", 'x = hasattr(self.context, "sums")'])
def test_the_probe_grep_catches_a_planted_line(tmp_path: Path, line: str) -> None:
    """Mutant: a copy of a real module with one probing line planted is flagged, the clean copy is not."""
    pkg = tmp_path / "dpspark"
    pkg.mkdir()
    source = (ROOT / "mechanisms" / "samplers" / "stages.py").read_text(encoding="utf-8")
    (pkg / "stages.py").write_text(source, encoding="utf-8")
    assert probes(pkg) == []
    (pkg / "stages.py").write_text(source + f"\n\ndef planted(ctx, backend, self=None):\n{line}\n", encoding="utf-8")
    assert len(probes(pkg)) == 1


# --- derived engine support ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ToySparkOnlyStage(FamilyStage):
    """A stage only Spark computes (a made-up kernel path: support is derived without importing it)."""

    kernels: ClassVar[dict[str, str]] = {"spark": "tests.unit.engine.test_backend_protocol:no_such_kernel"}


@dataclass(frozen=True)
class ToyBothStage(FamilyStage):
    kernels: ClassVar[dict[str, str]] = {"spark": "m:f", "arrow": "m:g"}


class Declares:
    """A mechanism as ``supported_engines`` sees it: the stages it declares, data-free."""

    def __init__(self, *infos: StageInfo) -> None:
        self.infos = list(infos)

    def stages(self) -> list[StageInfo]:
        return self.infos


def test_generic_stage_kernels() -> None:
    assert all(kernel_path(e, CountsStage) and kernel_path(e, SumsStage) for e in ENGINES)
    assert kernel_path("spark", OuterProductStage) and kernel_path("arrow", OuterProductStage) is None


def test_support_is_derived_from_the_declared_stage_types() -> None:
    counts = StageInfo("counts", "per index")
    assert supported_engines(Declares(counts)) == ("arrow", "spark")
    assert supported_engines(Declares(counts, StageInfo("s", "sums", stage=SumsStage))) == ("arrow", "spark")
    assert supported_engines(Declares(counts, StageInfo("toy", "toy", stage=ToySparkOnlyStage))) == ("spark",)
    assert supported_engines(Declares(StageInfo("o", "outer", stage=OuterProductStage))) == ("spark",)
    assert supported_engines(Declares(StageInfo("b", "both", stage=ToyBothStage))) == ("arrow", "spark")


def test_a_subclass_declares_its_own_kernels() -> None:
    """A family stage's subclass without an Arrow kernel is Spark-only (the answers' wide batches)."""
    from dpspark.mechanisms.answers.stage import ScalarTotalsStage, WideScalarTotalsStage

    assert kernel_path("arrow", ScalarTotalsStage) is not None
    assert kernel_path("arrow", WideScalarTotalsStage) is None
    assert kernel_path("spark", WideScalarTotalsStage) == kernel_path("spark", ScalarTotalsStage)


def _spec(mechanism: str, **extra: Any) -> Any:
    from dpspark.api.config import ReleaseSpec

    priv = {"mechanism": mechanism, "epsilon": "4", "max_units": extra.pop("n", 10**6), "unit_column": "u",
            **({"delta": "1/1000000000"} if extra.pop("delta", True) else {})}
    return ReleaseSpec.from_dict({"privacy": priv, "output": {"path": "/tmp/dpspark-unused"}, **extra},
                                 input_given=True)


@pytest.mark.parametrize("mechanism,extra,want,reads", [
    ("product_sampler", {"columns": {"names": ["b0", "b1", "b2"]}}, ("arrow", "spark"), 1),
    ("product_learner", {"n": 2 * 10**6, "columns": {"names": ["b0", "b1", "b2"]}}, ("arrow", "spark"), 1),
    ("gaussian_learner", {"n": 10**5, "gaussian": {"columns": ["g0", "g1"], "radius": "10", "kappa": "4"}},
     ("arrow", "spark"), 1),
    ("bernoulli_sampler", {"columns": {"names": ["b0", "b1"]}}, ("arrow", "spark"), 1),
    ("bounded_noise", {"queries": [{"name": "c", "kind": "count"}]}, ("arrow", "spark"), 1),
])
def test_real_mechanisms(mechanism: str, extra: dict[str, Any], want: tuple[str, ...], reads: int) -> None:
    """Family stages with both kernels give both engines; the multi-pass ones read their input once (no input cache)."""
    mech = construct(_spec(mechanism, **extra))
    assert supported_engines(mech) == want
    assert input_reads(mech) == reads
    assert len(mech.stages()) >= 1


def test_counts_only_mechanism_runs_on_both() -> None:
    mech = construct(_spec("dense", keys={"columns": ["k"]}, universe={"kind": "int_range", "lo": 0, "hi": 9},
                           n=100, delta=False))
    assert supported_engines(mech) == ("arrow", "spark") and input_reads(mech) == 1


def test_arrow_refuses_a_stage_it_has_no_kernel_for() -> None:
    import pyarrow as pa

    from dpspark.rng import SeededRandom

    with open_backend("arrow", rng=SeededRandom(1), source=pa.table({"x": [1]})) as backend:
        with pytest.raises(KernelMissingError, match="no kernel for ToySparkOnlyStage"):
            backend.compute(ToySparkOnlyStage())
        assert backend.passes_run == 0 and backend.last_pass_end is None


def test_arrow_backend_counts_passes_and_the_clock() -> None:
    import pyarrow as pa

    from dpspark.rng import SeededRandom

    stage = SumsStage(("x",), (0,), (10,), 0, None, 100)
    with open_backend("arrow", rng=SeededRandom(1), source=pa.table({"x": [1.0, 2.5, 30.0]})) as backend:
        assert backend.compute(stage) == [{"batch": 0, "units": 3, "sum_x": 1 + 3 + 10}]
        assert backend.passes_run == 1 and backend.last_pass_end is not None


def test_the_arrow_engine_imports_no_spark_module() -> None:
    """engine/arrow/ and the Arrow kernels of the families import nothing from engine/spark/."""
    files = list((ROOT / "engine" / "arrow").glob("*.py")) + [
        ROOT / "mechanisms" / "answers" / "arrow_kernel.py", ROOT / "mechanisms" / "samplers" / "arrow_stages.py"]
    for path in files:
        assert not _imports(path, "dpspark.engine.spark"), path


def test_the_engine_imports_no_family() -> None:
    """Backends find family kernels from the stage's type; only the plan looks a mechanism up by name (the
    registry), and nothing in the engine imports a family folder."""
    agnostic = re.compile(r"dpspark\.mechanisms(\.(registry|base))?\s+import|dpspark\.mechanisms\.(registry|base)\b")
    for path in (ROOT / "engine").rglob("*.py"):
        lines = _imports(path, "dpspark.mechanisms")
        assert all(agnostic.search(line) for line in lines), (path, lines)
        if path.name not in ("runner.py", "plan.py"):
            assert not lines, path


def _imports(path: Path, package: str) -> list[str]:
    pattern = re.compile(rf"^\s*(from|import)\s+{re.escape(package)}\b")
    return [line for line in path.read_text(encoding="utf-8").splitlines() if pattern.match(line)]
