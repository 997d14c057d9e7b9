"""The Python face of dpspark: configs, the Session, adaptive answers and the one budget charge.

* :class:`Session` (:mod:`.session`) - releases on a DataFrame, a pandas/Arrow table or a file, with a
  session budget; :meth:`Session.answers` opens :class:`AdaptiveAnswers` (:mod:`.session_answers`);
* :class:`ReleaseSpec`, :func:`load_config`, :func:`parse_config` (:mod:`.config`, one parser per section);
* :class:`Charge` (:mod:`.charge`) - session budget and ledger, checked in one order, then spent.

Names load lazily (``import dpspark.api`` imports nothing heavy).
"""

from dpspark._lazy import lazy_exports

_NAMES = {
    "AdaptiveAnswers": "session_answers",
    "AnswerBudgetExhausted": "session_answers",
    "Charge": "charge",
    "ConfigError": "config",
    "ReleaseSpec": "config",
    "Session": "session",
    "SessionBudgetExceeded": "charge",
    "SessionInputError": "session",
    "load_config": "config",
    "parse_config": "config",
}
__getattr__ = lazy_exports(__name__, _NAMES)

__all__ = sorted(_NAMES)
