"""Leak scan on real job output: no true count, raw key or number of distinct keys in manifests, logs or errors.

The input has known secrets: two heavy keys with true counts 104729 and 7919,
1007 keys seen once (1009 distinct keys, 113655 rows), and, for the
out-of-universe case, one key longer than the universe allows. The real
``dpspark release`` command runs in-process (its embedded session is the
shared test session; the capture is at the file-descriptor level, so JVM log
lines are scanned too), for a good config and for failing ones. The scan
covers the manifest and every other release file except ``bins.parquet``,
the ledger, stdout and stderr: released noisy counts may equal the true
counts by chance and released keys are public by design, so the bins are not
scanned (they are used once to show the scanner finds what is there).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.audit.leaks import assert_no_leaks, blobs_from_paths, find_leaks
from dpspark.cli.app import main as dpspark_main
from dpspark.api.config import load_config
from tests.support.fault_support import write_config

pytestmark = pytest.mark.spark

HEAVY = {"quokkazebra-ab": 104729, "marmotyakibis": 7919}
SINGLES = [f"lynx-{i:04d}-ovd" for i in range(1007)]
OVERSIZED = "oversized-pangolin-key"  # 22 bytes: outside the universe of strings of at most 15 bytes
DISTINCT = len(HEAVY) + len(SINGLES)
ROWS = sum(HEAVY.values()) + len(SINGLES)


def _table(extra: list[str] = ()) -> pa.Table:
    keys = [k for k, c in HEAVY.items() for _ in range(c)] + SINGLES + list(extra)
    return pa.table({"query": pa.array(keys, pa.string()), "ts": pa.array(range(len(keys)), pa.int64())})


def _secrets(cfg_path: Path) -> list[int | str]:
    universe = load_config(cfg_path).universe
    indexes = [universe.encode(k) for k in HEAVY]  # where a careless log would put the heavy keys' bins
    return [*HEAVY.values(), DISTINCT, ROWS, ROWS + 1, *HEAVY, OVERSIZED, *SINGLES[:5], SINGLES[-1], *indexes]


def _release(capfd: pytest.CaptureFixture[str], cfg: Path, out: Path) -> tuple[int, str]:
    code = dpspark_main(["release", "--config", str(cfg), "--output", str(out)])
    captured = capfd.readouterr()
    return code, captured.out + captured.err


def test_no_secret_in_manifest_logs_ledger_or_errors(spark, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert DISTINCT == 1009 and ROWS == 113655
    good, bad = tmp_path / "good.parquet", tmp_path / "bad.parquet"
    pq.write_table(_table(), good)
    pq.write_table(_table([OVERSIZED]), bad)
    ledger = tmp_path / "ledger.sqlite"
    users_ledger = tmp_path / "ledger-users.sqlite"
    blobs: dict[str, str | bytes] = {}

    ok_cfg = write_config(tmp_path, good, ledger=ledger, max_units=200_000, unit=False, name="ok.toml")
    secrets = _secrets(ok_cfg)
    out = tmp_path / "releases" / "rel"
    code, log = _release(capfd, ok_cfg, out)
    assert code == 0, log
    assert "release written" in log  # the progress lines are in the capture
    blobs["release log"] = log
    files = blobs_from_paths([out, ledger])
    bins = files.pop(str(out / "bins.parquet"))
    assert str(out / "manifest.json") in files
    blobs.update(files)
    # the scanner finds the heavy keys where they are legitimately published: it is not blind to this data
    assert find_leaks({"bins": bins}, list(HEAVY)), "the heavy keys should be released in the bins"

    failing = {
        "out-of-universe error": (
            write_config(tmp_path, bad, ledger=ledger, max_units=200_000, unit=False, name="oou.toml",
                         extra_privacy='out_of_universe = "error"'),
            "outside the declared universe",
        ),
        "too many units": (
            # its own ledger (the ledger pins n with the unit); refusal instead of the default truncation
            write_config(tmp_path, good, ledger=tmp_path / "ledger-n.sqlite", max_units=100_000, unit=False,
                         name="units.toml", extra_privacy='on_excess_units = "refuse"'),
            "more rows than privacy.max_units",
        ),
        "too many units (unit column)": (
            # its own ledger: the ledger pins each dataset's privacy unit, and the others are row-level
            write_config(tmp_path, bad.with_name("units.parquet"), ledger=users_ledger, max_units=1000, name="users.toml",
                         extra_privacy='on_excess_units = "refuse"'),
            "more units than privacy.max_units",
        ),
        "missing column": (
            write_config(tmp_path, good, ledger=ledger, max_units=200_000, unit=False, name="col.toml"),
            "input has no column",
        ),
    }
    users = _table([OVERSIZED]).append_column("user_id", pa.array(range(ROWS + 1), pa.int64()))
    pq.write_table(users, bad.with_name("units.parquet"))
    col = failing["missing column"][0]
    col.write_text(col.read_text().replace('columns = ["query"]', 'columns = ["querry"]'))
    for name, (cfg, expected) in failing.items():
        code, log = _release(capfd, cfg, tmp_path / "releases" / name.replace(" ", "-").replace("(", "").replace(")", ""))
        assert code == 2 and expected in log, (name, log[-2000:])
        blobs[name] = log
    blobs["ledger after failures"] = ledger.read_bytes()
    blobs["unit-column ledger after failures"] = users_ledger.read_bytes()
    assert_no_leaks(blobs, secrets)
