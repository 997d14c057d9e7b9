"""Issue 24 §6: progress with totals - "pass i of N" with an estimate of the time left, and no long silence.

A multi-pass release (gaussian_learner on the Arrow engine, N passes from its plan) prints every pass with the plan's total
and, after each but the last, the time left; the command line's printer prints a heartbeat when nothing was
printed for its interval (injected small here: the real one is 8 s, under the promised 10 s).
"""

from __future__ import annotations

import copy
import io
import re
import time
from pathlib import Path

import pyarrow.parquet as pq

from dpspark.engine.progress import HEARTBEAT_SECONDS, PassCounter, StderrProgress
from tests.support.golden import CASES


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_pass_counter_numbers_passes_and_estimates_the_time_left() -> None:
    lines: list[str] = []
    clock = FakeClock()
    counter = PassCounter(lines.append, planned=3, clock=clock)
    counter("reading the input into units")  # a pass's bare first line gets its number
    clock.now += 4
    counter.pass_done()
    counter("pass 2: second moments on Arrow")  # a kernel's own number gets the total
    clock.now += 2
    counter.pass_done()
    counter("pass 3: sums on Arrow")
    clock.now += 3
    counter.pass_done()
    assert lines == [
        "pass 1 of 3: reading the input into units",
        "pass 1 of 3 done (4.0 s so far); about 8 s of passes left",
        "pass 2 of 3: second moments on Arrow",
        "pass 2 of 3 done (6.0 s so far); about 3 s of passes left",
        "pass 3 of 3: sums on Arrow",
        "pass 3 of 3 done (all passes took 9.0 s); next: the noise on the driver, then the release's write",
    ]


def test_pass_counter_leaves_single_pass_and_unplanned_lines_alone() -> None:
    lines: list[str] = []
    one = PassCounter(lines.append, planned=1)
    one("reading input and counting keys on Arrow")
    one.pass_done()
    one("counts collected on the driver")
    unknown = PassCounter(lines.append)
    unknown("pass 1: sums")
    unknown.pass_done()
    assert lines == ["reading input and counting keys on Arrow", "counts collected on the driver", "pass 1: sums"]
    over = PassCounter(lines.append, planned=2)  # a number beyond the plan is never printed as "3 of 2"
    over("pass 3: extra")
    assert lines[-1] == "pass 3: extra"


def test_heartbeat_after_silence_and_none_after_close() -> None:
    out = io.StringIO()
    printer = StderrProgress(heartbeat=0.05, stream=out)
    printer("a long step")
    time.sleep(0.4)
    printer.close()
    text = out.getvalue()
    beats = [ln for ln in text.splitlines() if "still running" in ln]
    assert beats and all(ln.endswith(": a long step") for ln in beats), text
    time.sleep(0.2)
    assert out.getvalue() == text  # closed: silent
    assert HEARTBEAT_SECONDS < 10  # the promise: never more than 10 s without a line


def test_no_heartbeat_while_lines_keep_coming() -> None:
    out = io.StringIO()
    with StderrProgress(heartbeat=0.5, stream=out) as printer:
        for i in range(8):
            printer(f"step {i}")
            time.sleep(0.02)
    assert "still running" not in out.getvalue()


def _gaussian_spec(tmp_path: Path, **privacy: object):
    from dpspark.api.config import ReleaseSpec

    case = CASES["gaussian_learner"]
    pq.write_table(case.table(), tmp_path / "in.parquet")
    raw = {"input": {"path": "in.parquet"}, **copy.deepcopy(case.config), "output": {"path": "release"}}
    raw["privacy"].update(privacy)
    return ReleaseSpec.from_dict(raw, base_dir=tmp_path)


def test_multi_pass_release_prints_every_pass_of_n_with_time_left(tmp_path: Path) -> None:
    from dpspark.engine.runner import run_release
    from dpspark.rng import SeededRandom

    lines: list[str] = []
    spec = _gaussian_spec(tmp_path)
    n = _planned_passes(spec)
    assert n >= 3, n  # count, mean and covariance passes at least: a multi-pass release
    run_release(spec, rng=SeededRandom(b"progress"), progress=lines.append, engine="arrow")
    done = [ln for ln in lines if re.match(r"pass \d+ of \d+ done", ln)]
    totals = {int(t) for t in re.findall(r"pass \d+ of (\d+)", "\n".join(lines))}
    assert totals == {n}, lines  # every line counts against the plan's total
    assert [int(re.match(r"pass (\d+)", ln).group(1)) for ln in done] == list(range(1, n + 1)), lines
    assert all("of passes left" in ln for ln in done[:-1]) and "all passes took" in done[-1], done
    assert any(ln.startswith(f"pass 1 of {n}: ") for ln in lines) and any(ln.startswith(f"pass {n} of {n}: ") for ln in lines)


def _planned_passes(spec: object) -> int:
    """N from the release's own plan (the number of passes its dry run prints)."""
    from dpspark.engine.plan import build_mechanism

    return int(build_mechanism(spec).plan()["passes"])


def test_heartbeat_during_a_long_step_of_a_real_release(tmp_path: Path) -> None:
    """pad_seconds makes the driver's step last at least 1 s: the printer must speak during it."""
    from dpspark.engine.runner import run_release
    from dpspark.rng import SeededRandom

    out = io.StringIO()
    spec = _gaussian_spec(tmp_path, pad_seconds="1")
    with StderrProgress(heartbeat=0.2, stream=out) as printer:
        run_release(spec, rng=SeededRandom(b"progress"), progress=printer, engine="arrow")
    text = out.getvalue()
    n = _planned_passes(spec)
    assert f"pass {n} of {n} done" in text, text
    after_passes = text[text.index(f"pass {n} of {n} done"):text.index("writing the release atomically")]
    assert "still running" in after_passes, text  # the padded step spoke, by the heartbeat
    # issue 36 §6: and said what runs (the noise, the write), not "pass N of N done" as if a pass still ran
    beats = [ln for ln in after_passes.splitlines() if "still running" in ln]
    assert all("): the noise on the driver, then the release's write (after: pass" in ln for ln in beats), beats


def test_heartbeat_after_the_last_pass_names_what_runs() -> None:
    """Issue 36 §6: after "pass 7 of 7 done" the heartbeat said "still running ... pass 7 of 7 done" for 17 s."""
    lines: list[str] = []
    counter = PassCounter(lines.append, planned=2, clock=FakeClock())
    counter.pass_done()
    counter.pass_done()
    out = io.StringIO()
    printer = StderrProgress(heartbeat=0.05, stream=out)
    printer(lines[-1])
    time.sleep(0.3)
    printer.close()
    beats = [ln for ln in out.getvalue().splitlines() if "still running" in ln]
    assert beats and all(ln.endswith("): the noise on the driver, then the release's write (after: pass 2 of 2 "
                                     "done (all passes took 0.0 s))") for ln in beats), beats
