"""Every read of the data runs inside :func:`run_data_pass`: a failure reaches the caller only as a fixed error.

An exception raised while data is read is data too. A cast that fails quotes the row's value; a filter that
fails on one person's row answers a question about that person with no noise. So whatever goes wrong inside
a data pass becomes one :class:`DataPassError` whose text is fixed, and which carries nothing of the
original: no ``__cause__``, no ``__context__`` (it is raised after the ``except`` block has ended, so Python
does not chain it), no note, and a traceback whose frames hold nothing from the failed pass (only the
caller's own objects, such as the table a Session was given). The budget or answer slot
was charged before the pass began and stays charged (the callers do that; see :mod:`dpspark.engine.runner`).

Two exceptions pass with their own text, because it is built from public parameters only:

* :class:`~dpspark.errors.ValueFreeError` subclasses - the curator-side checks a config asks for, such as
  ``on_excess_units = "refuse"`` (re-raised as a fresh instance: no chain, no data frame);
* ``KeyboardInterrupt`` and other ``BaseException``\\ s that are not ``Exception``\\ s (the user stopped it).

A curator who owns the data may opt in to the details (``show_data_errors=True``, ``--show-data-errors``):
the fixed error is then chained to the original, with a warning that the details can quote rows.
"""

from __future__ import annotations

import warnings
from typing import Callable, TypeVar

from dpspark.errors import DPSparkError, ValueFreeError

T = TypeVar("T")

#: the whole text of a failed data pass (nothing in it depends on the data)
DATA_PASS_FAILED = ("the data pass failed; details are withheld because they could depend on the data; "
                    "the spend stays")
#: what opting in to the details means, shown as a warning every time it is used
SHOW_DATA_ERRORS_WARNING = (
    "show_data_errors is on: a failed data pass shows the original error, which can quote values of "
    "individual rows (a cast that failed names the value; a filter that failed tells a fact about one row). "
    "Use it only as the curator of this data, never where an analyst or a published log can see it.")


class DataPassError(DPSparkError, RuntimeError):
    """A data pass failed; its details are withheld because they could depend on the data (the spend stays)."""


def run_data_pass(read: Callable[[], T], *, show_data_errors: bool = False) -> T:
    """``read()``, with any failure turned into the fixed :class:`DataPassError` (see the module docstring)."""
    if show_data_errors:
        warnings.warn(SHOW_DATA_ERRORS_WARNING, UserWarning, stacklevel=2)
        try:
            return read()
        except ValueFreeError:
            raise
        except Exception as err:
            raise DataPassError(DATA_PASS_FAILED + " (details shown below: show_data_errors is on)") from err
    refused: tuple[type[ValueFreeError], tuple[str, ...]] | None = None
    try:
        return read()
    except ValueFreeError as err:  # its text is built from public parameters only
        refused = (type(err), tuple(str(a) for a in err.args))
    except Exception:  # noqa: BLE001 - every failure, whatever its type, is data
        pass
    # outside the except block: Python sets no __context__, and the original's frames are released
    if refused is not None:
        raise refused[0](*refused[1])
    raise DataPassError(DATA_PASS_FAILED)
