"""dpspark.engine.spark.remote and ``dpspark release --remote`` failure paths that need no server."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dpspark.cli.app import main
from dpspark.engine.spark import remote
from dpspark.engine.spark.remote import RemoteSessionError, check_remote_url, missing_connect_modules, remote_session
from tests.support.spark_procs import ABSENT_KEY, free_port, write_config


@pytest.mark.parametrize("url", ["sc://127.0.0.1:15002", "sc://localhost", "sc://h:1/;use_ssl=false;token=x"])
def test_connect_urls_are_accepted(url: str) -> None:
    assert check_remote_url(url) == url


@pytest.mark.parametrize("url", ["http://127.0.0.1:15002", "127.0.0.1:15002", "sc://", "sc://:15002", "sc://h:port"])
def test_other_urls_are_refused(url: str) -> None:
    with pytest.raises(RemoteSessionError, match="Spark Connect URL"):
        check_remote_url(url)


def test_the_connect_client_packages_are_installed() -> None:
    # pyspark 4.3's connect extra: grpcio, grpcio-status, googleapis-common-protos, zstandard
    assert missing_connect_modules() == []


def test_a_missing_client_package_is_named_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "CONNECT_MODULES", ("grpc", "no_such_module_dpspark", "nosuchpkg.sub"))
    with pytest.raises(RemoteSessionError) as err:
        remote_session("sc://127.0.0.1:1")
    assert "no_such_module_dpspark, nosuchpkg.sub" in str(err.value)
    assert "pip install 'dpspark[connect]'" in str(err.value)


def test_an_unreachable_server_fails_fast_naming_the_address() -> None:
    port = free_port()  # nothing listens there
    start = time.monotonic()
    with pytest.raises(RemoteSessionError, match=f"cannot reach a Spark Connect server at 127.0.0.1:{port}"):
        remote_session(f"sc://127.0.0.1:{port}")
    assert time.monotonic() - start < 10  # pyspark's own retries would take minutes


def _config(tmp_path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "in.parquet"
    pq.write_table(pa.table({"query": [ABSENT_KEY]}), data)
    return write_config(tmp_path / "c.toml", input_path=data, output=tmp_path / "out" / "rel", max_units=1000)


def test_cli_refuses_a_non_connect_url_before_spark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["release", "--config", str(_config(tmp_path)), "--remote", "http://127.0.0.1:15002"]) == 2
    assert "not a Spark Connect URL" in capsys.readouterr().err
    assert not (tmp_path / "out" / "rel").exists()


def test_cli_remote_and_master_are_exclusive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["release", "--config", str(_config(tmp_path)), "--remote", "sc://127.0.0.1:1", "--master", "local[1]"])
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
