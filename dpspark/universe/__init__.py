"""Key universes: public maps between key values and indexes [1, |X|].

Kinds: ``int_range``, ``categorical``, ``bytes``, ``string``, ``hashed`` (not a
bijection) and ``tuple`` (mixed radix over several columns). Indexes travel in
Arrow and Spark as big-endian FixedSizeBinary(16) (|X| <= 2^128) or (32)
words; see :mod:`dpspark.universe.wide` for the word format.
"""

from dpspark.universe.base import EncodedKeys, Universe
from dpspark.universe.categorical import CategoricalUniverse, values_sha256
from dpspark.universe.errors import KeyTypeError, OutOfUniverseError, UniverseConfigError
from dpspark.universe.hashed import HashedUniverse
from dpspark.universe.int_range import IntRangeUniverse
from dpspark.universe.parse import KINDS, universe_from_dict
from dpspark.universe.product import TupleUniverse
from dpspark.universe.shortlex import BytesUniverse, StringUniverse
from dpspark.universe.wide import MAX_UNIVERSE_SIZE, index_from_bytes, index_to_bytes, index_width

__all__ = [
    "KINDS",
    "MAX_UNIVERSE_SIZE",
    "BytesUniverse",
    "CategoricalUniverse",
    "EncodedKeys",
    "HashedUniverse",
    "IntRangeUniverse",
    "KeyTypeError",
    "OutOfUniverseError",
    "StringUniverse",
    "TupleUniverse",
    "Universe",
    "UniverseConfigError",
    "index_from_bytes",
    "index_to_bytes",
    "index_width",
    "universe_from_dict",
    "values_sha256",
]
