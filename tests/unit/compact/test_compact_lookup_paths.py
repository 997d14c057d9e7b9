"""Compact lookups: the evaluation paths agree, G's memoized decoder equals the sampler, index words map to phi."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from dpspark.mechanisms.compact.decode import CountDecoder
from dpspark.gf import GF2m, multipoint_eval
from dpspark.lookup import open_release
from dpspark.mechanisms.compact.reader import points_of_index_words
from dpspark.universe import IntRangeUniverse, StringUniverse, index_to_bytes
from tests.support.compact_support import build, write


def test_decoder_is_the_samplers_binary_search() -> None:
    release = build(IntRangeUniverse(0, 99, "k"), {1: 2}, 40, b"decoder", m=64)
    decoder = CountDecoder(release.sampler)
    gen = np.random.default_rng(3)  # test-input generation only
    probes = [1, 2, 1 << 64, (1 << 64) - 1] + [int(x) + 1 for x in gen.integers(0, 2**63, 300, dtype=np.int64)]
    for v in range(release.n + 1):  # every preimage edge
        lo, hi = release.sampler.preimage(v)
        probes += [lo, hi] if lo <= hi else []
    assert [decoder.count(u) for u in probes] == [release.sampler.sample(u) for u in probes]
    with pytest.raises(ValueError):
        decoder.count(0)


def test_index_words_map_to_phi() -> None:
    field = GF2m(128)
    indexes = [1, 2, 2**64, 2**64 + 1, 2**100 + 12345]
    words = pa.array([index_to_bytes(i, 16) for i in indexes], type=pa.binary(16))
    points = points_of_index_words(field, words)
    assert field.to_int(points) == [i - 1 for i in indexes]
    wide = GF2m(256)
    assert GF2m(256).to_int(points_of_index_words(wide, words)) == [i - 1 for i in indexes]


def test_batched_multipoint_scalar_and_string_keys_agree(tmp_path: Path) -> None:
    universe = StringUniverse(3, "k")
    counts = {universe.encode("ab") - 1: 4, universe.encode("") - 1: 2}
    release = build(universe, counts, 60, b"paths")
    rel = open_release(write(tmp_path, universe, release, batch_rows=16))
    gen = np.random.default_rng(8)  # test-input generation only
    keys = ["ab", "", "zz"] + ["".join(chr(97 + int(c)) for c in gen.integers(0, 26, int(n))) for n in gen.integers(0, 4, 400)]
    batched = rel.counts(keys)
    assert batched.tolist() == [rel.count(k) for k in keys]  # one-key Horner path
    field = GF2m(rel.m)  # the subproduct-tree path, whichever path the batch size selects
    points = field.from_int([universe.encode(k) - 1 for k in keys])
    values = multipoint_eval(field, np.ascontiguousarray(rel.coefficients), points)
    assert CountDecoder(release.sampler).counts_of_elements(field, values).tolist() == batched.tolist()
    assert rel.counts(keys[:20]).tolist() == batched[:20].tolist()  # horner_many path
    assert rel.counts([]).tolist() == []
    assert batched.tolist() == release.lookup([universe.encode(k) - 1 for k in keys])
