"""The ``toy_statement`` kind's reader: the generic statements base plus the one answer."""

from __future__ import annotations

from dpspark.lookup.statement_base import StatementLookup


class ToyLookup(StatementLookup):
    """An opened toy_statement release."""

    def answer(self) -> int:
        """The noisy clipped sum."""
        return int(self.section["answer"])

    def describe_lines(self) -> list[tuple[str, str]]:
        """``dpspark inspect``: the answer."""
        return [("answer", str(self.answer()))]
