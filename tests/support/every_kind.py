"""One real release of every registered mechanism (the golden cases, run on the Arrow engine), made once per root.

The golden cases (:mod:`tests.support.golden`) cover every mechanism of the registry, groups included; each runs
through the public path, :func:`dpspark.engine.runner.run_release`, into real files. The Spark-only variants are
left out: every family runs on Arrow, and one release per mechanism is what the readers' tests need.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from tests.support.golden import CASES, run_case

#: one case id per registered mechanism (the case id is the mechanism's name)
MECHANISMS = sorted(c for c in CASES if "+" not in c)


def release_of(case_id: str, root: Path, **config: Any) -> Path:
    """The release of golden case ``case_id`` under ``root`` (made on the first call, reused after).

    ``config``: sections to merge into the case's config (a variant; the directory name records it).
    """
    case = CASES[case_id]
    tag = case_id + "".join(f"-{k}" for k in sorted(config))
    out = root / tag / "release"
    if out.exists():
        return out
    merged = {k: dict(v) if isinstance(v, dict) else v for k, v in case.config.items()}
    for section, values in config.items():
        merged[section] = {**merged.get(section, {}), **values}
    return run_case(dataclasses.replace(case, engine="arrow", config=merged), root / tag)
