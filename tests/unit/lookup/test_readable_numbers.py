"""Issue 25, section 2: every kind's ``inspect`` and ``--dry-run`` print numbers a reader can take in.

No printed run of more than 20 digits, on one real release of every registered mechanism (groups included);
delta in scientific form, confidences as decimals, rho readable, the Gaussian learners' accuracy in the data's
units. The exact values stay in the manifest and behind ``inspect --exact``. The number helpers round the safe
way: an upper bound up, a confidence down (checked exactly, on rationals).
"""

from __future__ import annotations

import json
import random
import re
from fractions import Fraction
from pathlib import Path

import pytest

from dpspark.cli.app import main
from dpspark.mechanisms.registry import names
from dpspark.text import MAX_DIGITS, bound_text, confidence, readable_text, rounded
from tests.support.every_kind import MECHANISMS, release_of

LONG = re.compile(r"\d{%d,}" % (MAX_DIGITS + 1))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("every-kind")


def inspect(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    assert main(["inspect", *extra, str(path)]) == 0
    return capsys.readouterr().out


def test_every_registered_mechanism_has_a_release_here() -> None:
    assert set(MECHANISMS) == set(names()) and "groups" in MECHANISMS


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_inspect_prints_no_run_of_more_than_20_digits(root: Path, mechanism: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = inspect(release_of(mechanism, root), capsys)
    assert "Privacy:" in out and "Accuracy:" in out
    assert not LONG.findall(out), LONG.findall(out)[:3]
    assert not re.search(r"1 - \d+/\d+", out)  # a confidence is a decimal, never 1 - p/q


def test_bernoulli_at_the_examples_n_prints_its_tv_bound_readably(root: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: at a realistic n the exact TV bound has thousands of digits (the manifest keeps it)."""
    rel = release_of("bernoulli_sampler", root, privacy={"max_units": 20000, "epsilon": "1/100"})
    manifest = json.loads((rel / "manifest.json").read_text())
    assert LONG.search(manifest["accuracy"]["text"])  # the exact value is long...
    out = inspect(rel, capsys)
    assert not LONG.findall(out)  # ...and is printed short
    assert LONG.search(inspect(rel, capsys, "--exact"))  # --exact prints it in full


def test_exact_values_stay_behind_exact(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rel = release_of("bounded_noise", root)
    delta = json.loads((rel / "manifest.json").read_text())["mechanism"]["parameters"]["certified_delta"]
    out = inspect(rel, capsys)
    assert len(delta) > 100 and delta not in out
    # shortened whole, then cut: 9.24e-7, never the digits of a cut numerator over a cut denominator
    assert re.search(r"parameter certified_delta\s+9\.24e-7…\n", out)
    assert delta in inspect(rel, capsys, "--exact")


def test_delta_is_scientific_and_confidences_are_decimals(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = inspect(release_of("bounded_noise", root), capsys)
    assert re.search(r"add_remove: eps = 1, delta <= \d\.\d\de-7 under", out)  # 9.24e-7, rounded up
    assert "with probability >= 0.95" in out
    rel = release_of("product_learner", root)
    beta = json.loads((rel / "manifest.json").read_text())["accuracy"]["statement"]["claims"][0]["beta"]
    exact = 1 - Fraction(int(beta["num"], 16), int(beta["den"], 16))
    out = inspect(rel, capsys)
    shown = re.search(r"with probability >= (0\.\d{1,6})\b", out)  # a short decimal, never 1 - p/q
    assert shown, out
    assert exact - Fraction(1, 10**5) <= Fraction(shown.group(1)) <= exact  # rounded down, to 5 significant digits
    out = inspect(release_of("gaussian_mean", root), capsys)
    assert re.search(r"add_remove: rho <= 0\.\d+, zCDP", out) and re.search(r"rho \(composed\)\s+rho <= 0\.\d+ ", out)


def test_gaussian_learner_states_its_accuracy_in_the_datas_units(root: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rel = release_of("gaussian_learner", root)
    m = json.loads((rel / "manifest.json").read_text())
    claim = m["accuracy"]["statement"]["claims"][0]
    bound = Fraction(int(claim["bound"]["num"]), int(claim["bound"]["den"]))
    # issue 36: the manifest's claim itself is in the data's units (the last pass sums y = M x, unit
    # 2^-(data + matrix bits)), so rel.accuracy and inspect agree; before, it held the fixed-point integers
    assert bound < 10**6  # the fixed-point integers were ~2^(data + matrix bits) = 2^40 or more times larger
    out = inspect(rel, capsys)
    assert "integer units" not in out
    line = next(x for x in out.splitlines() if "noise of the last pass (mean: each coordinate" in x)
    shown = Fraction(re.search(r"<= ([0-9.e-]+) for every coordinate", line).group(1))
    assert bound <= shown <= bound * Fraction(101, 100)  # rounded up, 3 significant digits


def test_dry_run_of_answers_prints_readable_bounds_per_query(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``dpspark release --dry-run`` of the answers example: delta certified to 100 digits is printed short, and
    each query's bounds are in its own units (not "units of sensitivity")."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    conf = Path(__file__).resolve().parents[3] / "conf" / "answers_bounded_noise.toml"
    text = re.sub(r'^path = "[^"]*"', 'path = "in.parquet"', conf.read_text(), count=1, flags=re.M)
    text = re.sub(r'(\[output\]\s*\npath = )"[^"]*"', r'\1"out/rel"', text)
    (tmp_path / "c.toml").write_text(text)
    cols = {"user_id": [1], "income": [1.0], "hours": [1.0], "region": ["north"], "age": [30]}
    pq.write_table(pa.table(cols), tmp_path / "in.parquet")
    (tmp_path / "out").mkdir()
    assert main(["release", "--config", str(tmp_path / "c.toml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert not LONG.findall(out)
    assert re.search(r"error bar\s+per_query income_total: R \(always\) = 79400, bound95", out)
    assert not any((tmp_path / "out").iterdir())  # a dry run writes nothing


# --- the number helpers: short, and rounded the safe way -----------------------------------------------------
def _rationals(count: int) -> list[Fraction]:
    gen = random.Random(25)
    out = [Fraction(1, 10**9), Fraction(1, 20), Fraction(999999, 1000000), Fraction(9995, 10), Fraction(1, 3)]
    for _ in range(count):
        out.append(Fraction(gen.getrandbits(gen.randint(1, 400)) + 1, gen.getrandbits(gen.randint(1, 400)) + 1))
    return out


def test_rounded_up_is_an_upper_bound_and_down_a_lower_bound() -> None:
    for x in _rationals(300):
        up, exact_up = rounded(x, 3, up=True)
        down, exact_down = rounded(x, 3, up=False)
        assert Fraction(up) >= x >= Fraction(down) and len(up.replace("-", "")) <= 12
        assert exact_up == (Fraction(up) == x) and exact_down == (Fraction(down) == x)
        assert Fraction(up) - Fraction(down) <= x / 50  # three significant digits
        shown = bound_text(x)
        assert Fraction(shown.split()[-1]) >= x and (shown.startswith("= ") == (Fraction(shown[2:]) == x))


def test_confidence_is_never_above_the_truth() -> None:
    for beta in _rationals(300):
        if not 0 < beta < 1:
            continue
        text = confidence(beta)
        value = 1 - Fraction(text[4:]) if text.startswith("1 - ") else Fraction(text)
        assert value <= 1 - beta and not LONG.search(text)
        assert 1 - value <= beta * Fraction(101, 100)  # and close: beta to about 3 digits
    assert confidence(Fraction(1, 20)) == "0.95" and confidence(0) == "1"


def test_readable_text_shortens_long_numbers_only() -> None:
    text = "ratio 39/38, n = 300, delta = 5612354759935134799329376793396565594755/6070840288205403346623318458823496583257"
    out = readable_text(text)
    assert out.startswith("ratio 39/38, n = 300, delta = 0.924…") and not LONG.search(out)
    assert readable_text("x" + "7" * 30 + "y") == "x<30 digits>y"  # a run glued to letters is still cut
    assert readable_text("holds w.p. >= 1 - 1/20, and 1 - 3/2^7") == "holds w.p. >= 0.95, and 1 - 3/2^7"
