"""Issue 15, sections 3 and 4.2: quiet Spark, an early first line, the demo's reuse, gen_queries, --no-verify, created_utc."""

from __future__ import annotations

from fractions import Fraction

import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from dpspark.cli.app import main
from dpspark.api.config import load_config
from dpspark.mechanisms.histogram.result import AccuracyStatement, HistogramRelease, add_remove_statement
from dpspark.release.manifest import read_manifest
from dpspark.mechanisms.registry import construct

from tests.support.configs import dense_toml

ROOT = Path(__file__).resolve().parents[3]
CONFIG = dense_toml("v")


def _config(tmp_path: Path) -> Path:
    (tmp_path / "in.parquet").write_bytes(b"PAR1")
    (tmp_path / "c.toml").write_text(CONFIG)
    return tmp_path / "c.toml"


# ---- 3.1 quiet Spark -----------------------------------------------------------------------------


def test_spark_defaults_turn_the_ui_off_and_logs_down() -> None:
    conf = dict(
        line.split(None, 1) for line in (ROOT / "conf" / "spark-defaults.conf").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )
    assert conf["spark.ui.enabled"].strip() == "false" and conf["spark.log.level"].strip() == "WARN"
    assert conf["spark.ui.showConsoleProgress"].strip() == "false"  # issue 25 §4.1: no console progress bar
    assert "log4j2.configurationFile=conf/log4j2.properties" in conf["spark.driver.extraJavaOptions"]
    from dpspark.engine.spark.local import DEFAULT_CONF, QUIET_SUBMIT_CONF

    assert DEFAULT_CONF["spark.ui.enabled"] == "false" and "spark.log.level" in DEFAULT_CONF
    assert DEFAULT_CONF["spark.ui.showConsoleProgress"] == "false"
    assert QUIET_SUBMIT_CONF == {"spark.ui.enabled": "false", "spark.log.level": "WARN",
                                 "spark.ui.showConsoleProgress": "false"}


ACTIVE = """
from dpspark.engine.spark.local import active_session
spark = active_session("t")
conf = spark.sparkContext.getConf()
print("RESULT", conf.get("spark.ui.enabled"), conf.get("spark.log.level"))
spark.stop()
"""


def test_spark_submit_session_is_quiet_unless_the_user_says_otherwise() -> None:
    """The user's --conf spark.ui.enabled=true is kept; the log level they did not set becomes WARN."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_SUBMIT_ARGS": "--master local[1] --conf spark.ui.enabled=true --conf spark.ui.port=0 pyspark-shell"}
    out = subprocess.run([sys.executable, "-c", ACTIVE], env=env, capture_output=True, text=True, timeout=300)
    assert "RESULT true WARN" in out.stdout, out.stderr[-2000:]


# ---- 3.2 a first line before Spark starts ---------------------------------------------------------


def test_release_prints_before_spark_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    import dpspark.engine.spark.local as session

    seen: list[str] = []

    def no_spark(*args: object, **kwargs: object) -> None:
        seen.append(capsys.readouterr().err)
        raise session.SparkStartError("no Spark in this test")  # a user-facing error: the CLI reports it

    monkeypatch.setattr(session, "local_session", no_spark)
    assert main(["release", "--config", str(_config(tmp_path)), "--master", "local[1]"]) == 2
    assert seen and "checking" in seen[0] and "starting local Spark" in seen[0]


# ---- 3.3 the demo reuses its releases --------------------------------------------------------------


def test_demo_reuses_its_releases_and_readme_says_so() -> None:
    demo = (ROOT / "scripts" / "demo").read_text()
    assert "date -u" not in demo  # no fresh, time-stamped release paths
    for var in ("STAB", "PURE", "COMPACT"):
        assert f'if [ -f "${var}/manifest.json" ]; then' in demo
    assert "--properties-file conf/spark-defaults.conf" in demo and "ensure_cjk_font" in demo
    readme = (ROOT / "README.md").read_text()
    assert "a second run only checks" not in readme and "reuses" in readme


# ---- 3.4 gen_queries makes the output's parent directory --------------------------------------------


def test_gen_queries_creates_the_parent_directory(tmp_path: Path) -> None:
    out = tmp_path / "fresh" / "dir" / "q.parquet"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_queries.py"), str(out), "--rows", "50",
                    "--users", "5", "--vocab", "20"], check=True, capture_output=True, timeout=120)
    assert out.stat().st_size > 0


# ---- 3.5 --no-verify -------------------------------------------------------------------------------


def test_no_verify_says_what_it_gives_up() -> None:
    from dpspark.cli.app import build_parser
    from dpspark.lookup import open_release

    assert "wrong keys" in " ".join((open_release.__doc__ or "").split()).lower()
    sub = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in ("lookup", "plot"):
        assert "WRONG KEYS" in " ".join(sub[name].format_help().split())


# ---- 4.2 the creation time ---------------------------------------------------------------------------


def test_created_utc_is_the_plan_time_and_every_mtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dpspark.engine.runner as job

    cfg = load_config(_config(tmp_path))
    release = HistogramRelease(
        algorithm="BasicHistogram", indices=tuple(range(10)), counts=(1,) * 10, universe_size=10, n=10,
        privacy=add_remove_statement(10, exp_eps=construct(cfg).counting.exp_eps, bias_epsilon=Fraction(0),
                                     delta=Fraction(0), theorem="test"),
        accuracy=AccuracyStatement.histogram(3, Fraction(1, 20), -1, 5, Fraction(1, 20), "test"),
        parameters={"mechanism": {"mechanism": "GeoSample"}},
    )

    def slow_job(plan: job.Plan, data: object, rng: object, show: object, arrow_source: object = None,
                 show_data_errors: bool = False) -> Path:
        time.sleep(1.2)  # the data takes a while: the finishing time must not show
        return job.write_release(plan.spec, release, "test", "sparse", plan.created_utc)

    monkeypatch.setattr(job, "_run", slow_job)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"v": pa.array([1, 2], pa.int64())}), tmp_path / "in.parquet")  # a real file: its schema is checked
    started = int(time.time())
    out = job.run_release(cfg, progress=lambda m: None)
    created = read_manifest(out).created_utc
    stamp = int(datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp())
    assert started <= stamp <= started + 1 and stamp < int(time.time())  # the start, not the end
    for path in [out, *out.iterdir()]:
        assert int(path.stat().st_mtime) == stamp, path
