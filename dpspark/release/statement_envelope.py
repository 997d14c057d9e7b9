"""Compatibility names for the mechanisms' ``run()``: the statement types now live in :mod:`dpspark.release.statements`.

There is one envelope (:mod:`dpspark.release.manifest`); this module only keeps the old import path of
:class:`StatementRelease` and :func:`standard_statements` until every mechanism imports them from
:mod:`dpspark.release.statements`.
"""

from dpspark.release.statements import StatementRelease, standard_statements

__all__ = ["StatementRelease", "standard_statements"]
