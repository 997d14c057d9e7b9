"""Issue 25 §4.2-§4.4 and §4.6: what a new user met on the command line and in a Session.

* §4.2 the help texts say what dpspark is now (every family; Arrow the default for a local file);
* §4.3 a release creates its output's missing parent folders (the dry run accepts them), and Session releases
  without ``output=`` do not pile up in the temp directory;
* §4.4 a manifest records the input's file name, never the curator's folders;
* §4.6 the dry run and ``inspect`` of an answers release say the same about units beyond n.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.cli.app import build_parser, main
from tests.support.configs import dense_toml
from tests.support.golden import ANSWER_QUERIES, answers_table

ROOT = Path(__file__).resolve().parents[3]


def _help(*argv: str) -> str:
    parser = build_parser()
    if not argv:
        return " ".join(parser.format_help().split())
    sub = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    return " ".join(sub[argv[0]].format_help().split())


# ---- §4.2 help ------------------------------------------------------------------------------------------
def test_top_help_names_every_family_and_both_engines() -> None:
    text = _help()
    assert "histogram releases" not in text.lower()
    for word in ("histograms", "answers", "samples", "learned distributions", "grouped aggregates", "Arrow", "Spark"):
        assert word in text, word


def test_release_help_says_arrow_is_the_default_and_any_mechanism_runs() -> None:
    text = _help("release")
    assert "any mechanism" in text and "Arrow for a local file, the default" in text
    assert "on an embedded local Spark" not in text.split("--master")[0]  # the one-line summary is not Spark-first
    assert "--engine spark alone uses local[*]" in text  # --master no longer claims a default
    assert "dpspark release --config conf/product_learner.toml" in text  # an example beyond histograms
    for example in ("product_learner", "gaussian_learner", "queries-stability"):  # the examples' configs exist
        assert f"conf/{example}.toml" in text and (ROOT / "conf" / f"{example}.toml").exists()


def test_lookup_and_plot_help_name_what_they_read() -> None:
    assert "groups release" in _help("lookup") and "histogram" in _help("lookup")
    assert "groups release" in _help("plot")


# ---- §4.3 output directories ----------------------------------------------------------------------------
def _dense_config(tmp_path: Path) -> Path:
    pq.write_table(pa.table({"v": pa.array([1, 2, 3, 3], pa.int64())}), tmp_path / "in.parquet")
    (tmp_path / "c.toml").write_text(dense_toml("v"))
    return tmp_path / "c.toml"


def test_release_creates_missing_parents_and_the_dry_run_accepts_them(tmp_path: Path, capsys) -> None:
    cfg = _dense_config(tmp_path)
    out = tmp_path / "not" / "yet" / "there" / "release"
    assert main(["release", "--config", str(cfg), "--output", str(out), "--dry-run"]) == 0
    assert not (tmp_path / "not").exists()  # a dry run writes nothing
    assert main(["release", "--config", str(cfg), "--output", str(out)]) == 0
    assert (out / "manifest.json").is_file()
    blocked = tmp_path / "file"
    blocked.write_text("x")  # a parent that is a file cannot be created: refused before anything is spent
    assert main(["release", "--config", str(cfg), "--output", str(blocked / "sub" / "release"), "--dry-run"]) == 2
    assert "cannot create" in capsys.readouterr().err


SESSION_SCRIPT = r"""
import sys
import pandas as pd
import dpspark
keep = sys.argv[1] == "keep"
data = pd.DataFrame({"u": [1, 2, 3], "city": ["Oslo", "Lima", "Oslo"]})
s = dpspark.Session(data, max_units=10, unit_column="u", keep_releases=keep)
h = s.histogram(keys=["city"], universe={"kind": "categorical", "values": ["Oslo", "Lima"]}, mechanism="dense",
                epsilon="1")
print(s.releases[-1])
assert s.releases[-1].is_dir()
"""


@pytest.mark.parametrize("mode", ["default", "keep"])
def test_session_releases_without_output_are_removed_at_exit_unless_kept(tmp_path: Path, mode: str) -> None:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", SESSION_SCRIPT, mode], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    path = Path(proc.stdout.strip().splitlines()[-1])
    assert path.is_relative_to(tmp_path)  # under the temp directory
    if mode == "keep":
        assert (path / "manifest.json").is_file()
    else:
        assert not path.exists() and list(tmp_path.iterdir()) == []  # nothing left behind


# ---- §4.4 the input's path in the manifest -------------------------------------------------------------
def test_manifest_records_the_input_file_name_only(tmp_path: Path) -> None:
    cfg = _dense_config(tmp_path)
    out = tmp_path / "rel"
    assert main(["release", "--config", str(cfg), "--output", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["input"] == {"format": "parquet", "path": "in.parquet"}
    assert str(tmp_path) not in (out / "manifest.json").read_text()  # no folder of the curator's anywhere


def test_input_name_of_paths_and_uris() -> None:
    from dpspark.engine.spec import InputSpec, input_name

    assert input_name("/home/me/data/flights.parquet") == "flights.parquet"
    assert input_name("s3a://bucket/warehouse/flights/") == "flights"
    assert input_name("flights.csv") == "flights.csv"
    assert InputSpec(None, "db.flights", None).describe() == {"table": "db.flights"}


# ---- §4.6 the same words about units beyond n -----------------------------------------------------------
def test_answers_dry_run_and_inspect_agree_on_excess_units(tmp_path: Path, capsys) -> None:
    pq.write_table(answers_table(), tmp_path / "in.parquet")
    lines = ["[input]", 'path = "in.parquet"', "[privacy]", 'mechanism = "bounded_noise"', 'epsilon = "1"',
             'delta = "1e-6"', "max_units = 400", 'unit_column = "u"']
    for q in copy.deepcopy(ANSWER_QUERIES):
        lines.append("[[queries]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in q.items()]
    lines += ["[output]", 'path = "rel"']
    (tmp_path / "a.toml").write_text("\n".join(lines) + "\n")
    assert main(["release", "--config", str(tmp_path / "a.toml"), "--dry-run"]) == 0
    plan = capsys.readouterr().out
    assert main(["release", "--config", str(tmp_path / "a.toml")]) == 0
    capsys.readouterr()
    assert main(["inspect", str(tmp_path / "rel")]) == 0
    shown = capsys.readouterr().out
    from dpspark.mechanisms.answers.family import EXCESS_UNITS

    words = EXCESS_UNITS["bounded_noise"]
    assert words.startswith("none removed")
    assert f"excess units: {words}" in plan and f"more than n units: {words}" in shown
    assert "truncate" not in plan.split("privacy unit", 1)[1].splitlines()[0] and "truncate" not in shown
    assert "key(s)" not in shown and "key(s)" not in plan  # answers count no keys: no per-key bounds


@pytest.mark.parametrize("case_id", ["product_learner", "product_sampler", "gaussian_learner"])
def test_learners_dry_run_and_inspect_agree_on_excess_units(case_id: str, tmp_path: Path, capsys) -> None:
    """§4.6 for the families that remove no unit: the plan's words and inspect's words are the family's one
    declaration, and neither says "truncate" (nothing is truncated: estimates divide by a noisy count)."""
    from dpspark.api.config import ReleaseSpec
    from dpspark.engine.plan import build_mechanism
    from dpspark.mechanisms.declared import declared_excess_units
    from tests.support.every_kind import release_of
    from tests.support.golden import CASES

    rel = release_of(case_id, tmp_path)
    pq.write_table(CASES[case_id].table(), tmp_path / "in.parquet")
    raw = {"input": {"path": "in.parquet"}, **copy.deepcopy(CASES[case_id].config), "output": {"path": "r"}}
    planned = build_mechanism(ReleaseSpec.from_dict(raw, base_dir=tmp_path)).excess_units_text()
    words = declared_excess_units(case_id)
    assert words is not None and words.startswith("none removed") and planned == words
    assert main(["inspect", str(rel)]) == 0
    shown = capsys.readouterr().out
    assert f"more than n units: {words}" in shown and "units: truncate" not in shown


@pytest.mark.parametrize("case_id", ["product_learner", "gaussian_mean"])
def test_learners_refuse_on_excess_units_they_never_act_on(case_id: str, tmp_path: Path) -> None:
    """``on_excess_units = "refuse"`` would be stated but never acted on (no unit is removed): refused
    before any spend, naming the mechanism."""
    from dpspark.api.config import ReleaseSpec
    from dpspark.engine.spec import ConfigError
    from tests.support.golden import CASES

    pq.write_table(CASES[case_id].table(), tmp_path / "in.parquet")
    raw = {"input": {"path": "in.parquet"}, **copy.deepcopy(CASES[case_id].config), "output": {"path": "r"}}
    raw["privacy"]["on_excess_units"] = "refuse"
    with pytest.raises(ConfigError, match=f"does not apply to '{case_id}'"):
        ReleaseSpec.from_dict(raw, base_dir=tmp_path)
