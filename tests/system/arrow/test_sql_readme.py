"""The README's first example (a DP SQL query on the demo data) runs as written, on a small demo sample."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[3] / "README.md"
REPO = README.parent


def test_readme_sql_example_runs(tmp_path: Path, capsys: Any) -> None:
    from dpspark.cli.app import main

    block = re.search(r"<!-- readme-sql-example -->\n```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert block, "README lost its SQL example"
    tokens = shlex.split(block.group(1).replace("\\\n", " "), comments=True)
    starts = [i for i, t in enumerate(tokens) if t == "dpspark"] + [len(tokens)]
    sql, lookup = (tokens[a + 1:b] for a, b in zip(starts, starts[1:]))
    assert sql[0] == "sql" and lookup[0] == "lookup"
    data = tmp_path / "demo-output" / "queries.parquet"
    data.parent.mkdir()
    subprocess.run([sys.executable, str(REPO / "scripts" / "gen_queries.py"), str(data), "--rows", "5000",
                    "--users", "1000", "--vocab", "200", "--seed", "11"], check=True, stdout=subprocess.DEVNULL)
    fix = [a.replace("demo-output/", f"{tmp_path}/demo-output/") for a in sql]
    assert main(fix) == 0
    assert main([a.replace("demo-output/", f"{tmp_path}/demo-output/") for a in lookup]) in (0, 1)
    assert "searches" in capsys.readouterr().out
