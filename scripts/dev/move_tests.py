#!/usr/bin/env python3
"""Issue 21: move the flat tests/ folder to tests/unit/<package>/, tests/system/<kind>/ and tests/support/.

Run once on a clean checkout (python3 scripts/dev/move_tests.py); it git-mv's every file named in
PLACES, adds the packages' __init__.py and rewrites `tests.<module>` imports and `tests/<file>` paths
in dpspark/, docs/, scripts/, tests/, README.md and pyproject.toml.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PLACES: dict[str, list[str]] = {
    "unit/core": ["test_rng", "test_exact_params", "test_errors"],
    "unit/gf": ["test_gf_fast_paths", "test_gf_fft", "test_gf_field", "test_gf_poly", "test_gf_subproduct",
                "test_gf_not_on_sparse_path"],
    "unit/universe": ["test_universe_codec", "test_universe_specs", "test_universe_spark"],
    "unit/privacy": ["test_privacy_budget", "test_privacy_conversions", "test_privacy_epsilon",
                     "test_privacy_relations", "test_privacy_statements"],
    "unit/noise": ["test_counting_batch", "test_counting_exact", "test_counting_stat", "test_dgauss_certify",
                   "test_dgauss_exact", "test_dgauss_grid", "test_dgauss_stat", "test_dgauss_tail",
                   "test_bounded_calibrate", "test_bounded_noise", "test_bounded_privacy", "test_bounded_figure1"],
    "unit/engine": ["test_engine_preflight", "test_engine_stages", "test_predicate", "test_null_rules",
                    "test_sums_stage_nan", "test_data_pass_trust", "test_plan_extremes"],
    "unit/release": ["test_release_atomic", "test_release_corruption", "test_release_reader_values",
                     "test_release_roundtrip", "test_release_statement", "test_release_trust"],
    "unit/lookup": ["test_lookup_api", "test_lookup_usability"],
    "unit/ledger": ["test_ledger_store", "test_ledger_concurrency", "test_ledger_totals_units"],
    "unit/api": ["test_config", "test_session_api", "test_answers_trust"],
    "unit/cli": ["test_lookup_cli", "test_ledger_cli", "test_job_usability"],
    "unit/audit": ["test_audit_compact", "test_audit_honest", "test_audit_leaks", "test_audit_mutants",
                   "test_audit_stats", "test_audit_timing"],
    "unit/histogram": ["test_hist_accuracy_at", "test_hist_basic_stability", "test_hist_binsample_cdf",
                       "test_hist_check_counts", "test_hist_distinct", "test_hist_distinct_fast",
                       "test_hist_keepheavy", "test_hist_lazy_bits", "test_hist_ordstat", "test_hist_pure_sparse",
                       "test_hist_sparse", "test_stability_replacement", "test_engine_contribution"],
    "unit/compact": ["test_compact_exhaustive", "test_compact_kav", "test_compact_lookup_paths",
                     "test_compact_release", "test_compact_release_corruption", "test_compact_samplers",
                     "test_compact_stat"],
    "unit/answers": ["test_answers_mechanism", "test_answers_release"],
    "unit/samplers": ["test_samplers_bernoulli", "test_samplers_kary", "test_samplers_release",
                      "test_binary_array_input"],
    "unit/product": ["test_product_learner", "test_product_privacy", "test_product_release", "test_product_rounds",
                     "test_product_sampler"],
    "unit/gaussian_model": ["test_gaussian_accuracy", "test_gaussian_exact"],
    "system/arrow": ["test_arrow_backend"],
    "system/spark": ["test_spark_counts", "test_spark_session", "test_audit_spark", "test_gaussian_spark",
                     "test_leakscan_job"],
    "system/submit": ["test_submit_families", "test_submit_release", "test_cluster_package", "test_cluster_release"],
    "system/connect": ["test_connect_release", "test_connect_remote"],
    "system/fault": ["test_fault_disk", "test_fault_kill", "test_fault_retries"],
    "system/e2e": ["test_job_e2e", "test_compact_job_e2e", "test_fuzz_job_release", "test_examples_configs",
                   "test_readme_api", "test_doc_citations", "test_golden_releases", "test_port_fixtures",
                   "test_engine_plugin"],
}
SUPPORT = {  # old module -> new module under tests/support/
    "chisq": "chisq", "compact_support": "compact_support", "configs": "configs", "fault_support": "fault_support",
    "release_fixtures": "release_fixtures", "spark_procs": "spark_procs", "test_hist_support": "hist_support",
    "test_release_support": "release_support",
}
FOLDERS = {"tests/plugins": "tests/support/plugins", "tests/data": "tests/support/data"}


def git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=ROOT, check=True)


def main() -> int:
    if subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout.strip():
        print("move_tests: the checkout has uncommitted changes", file=sys.stderr)
        return 2
    modules: dict[str, str] = {}  # old dotted -> new dotted
    paths: dict[str, str] = {}
    for folder, names in PLACES.items():
        for name in names:
            modules[f"tests.{name}"] = f"tests.{folder.replace('/', '.')}.{name}"
            paths[f"tests/{name}.py"] = f"tests/{folder}/{name}.py"
    for old, new in SUPPORT.items():
        modules[f"tests.{old}"] = f"tests.support.{new}"
        paths[f"tests/{old}.py"] = f"tests/support/{new}.py"
    flat = {p.stem for p in (ROOT / "tests").glob("test_*.py")}
    unplaced = flat - {m.split(".")[1] for m in modules}
    if unplaced:
        print(f"move_tests: not placed: {sorted(unplaced)}", file=sys.stderr)
        return 2
    for old, new in paths.items():
        (ROOT / new).parent.mkdir(parents=True, exist_ok=True)
        git("mv", old, new)
    for old, new in FOLDERS.items():
        git("mv", old, new)
    for d in sorted({Path(p).parent for p in paths.values()} | {Path("tests/unit"), Path("tests/system")}):
        init = ROOT / d / "__init__.py"
        if not init.exists():
            init.write_text("")
            git("add", str(d / "__init__.py"))
    mod_re = re.compile(r"\btests\.(" + "|".join(sorted((m.split(".", 1)[1] for m in modules), key=len, reverse=True)) + r")\b")
    path_re = re.compile(r"\btests/(" + "|".join(re.escape(p.split("/", 1)[1]) for p in paths) + r")")
    folder_re = re.compile(r"\btests/(plugins|data)\b")
    files = [p for d in ("dpspark", "docs", "scripts", "tests", "jobs", "conf") for p in (ROOT / d).rglob("*")
             if p.is_file() and p.suffix in {".py", ".md", ".toml", ".sh", ""} and "__pycache__" not in p.parts]
    files += [ROOT / "README.md", ROOT / "pyproject.toml"]
    changed = 0
    for f in files:
        try:
            text = f.read_text()
        except UnicodeDecodeError:
            continue
        new = mod_re.sub(lambda m: modules["tests." + m.group(1)], text)
        new = path_re.sub(lambda m: paths["tests/" + m.group(1)], new)
        new = folder_re.sub(lambda m: "tests/support/" + m.group(1), new)
        new = new.replace("tests.support.plugins.", "tests.support.plugins.")
        if new != text:
            f.write_text(new)
            changed += 1
    print(f"move_tests: moved {len(paths)} files and 2 folders, rewrote {changed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
