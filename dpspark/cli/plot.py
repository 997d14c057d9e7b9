"""The ``dpspark plot`` command: the top-K bins of a sparse release with their error bars, as a PNG.

A statements kind whose reader has ``plot_bars(top)`` (groups: one panel per aggregate) draws those panels.
"""

from __future__ import annotations

import argparse
from typing import Any

from dpspark.cli.common import NO_VERIFY_HELP, command_parser
from dpspark.cli.common import fail as _fail
from dpspark.errors import DPSparkError, ParameterError
from dpspark.text import short


def _printable(value: Any) -> str:
    text = str(value)
    return text if isinstance(value, (str, int)) and text.isprintable() else ascii(value)


def _labels(table: Any, manifest: Any) -> list[str]:
    cols = manifest.bins["columns"]
    per_key: list[list[str]] = []
    for key in manifest.key_columns:
        roles = {c["role"]: c["name"] for c in cols if c.get("key_column") == key}
        if "key" in roles:
            values = table.column(roles["key"]).to_pylist()
            fallback = table.column(roles["key_bytes"]).to_pylist() if "key_bytes" in roles else values
            per_key.append([_printable(b) if v is None else _printable(v) for v, b in zip(values, fallback)])
        else:
            per_key.append([f"#{int.from_bytes(bytes(v), 'big'):x}" for v in table.column(roles["key_hash_bin"]).to_pylist()])
    return [", ".join(parts) for parts in zip(*per_key)]


def count_label(config: dict[str, Any]) -> str:
    """The y axis: a noisy count of what was counted (after contribution bounding), not of the data's rows."""
    from dpspark.text.counted import counted_words

    words = counted_words(config)
    head, _, tail = words.partition(", ")
    return f"noisy count:\n{head}" + (f"\n({tail})" if tail else "")


def _cmd_plot(args: argparse.Namespace) -> int:
    import numpy as np

    from dpspark.lookup import open_release

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return _fail("plot", ImportError("matplotlib is not installed; install the 'plot' extra: pip install 'dpspark[plot]'"))
    if args.top < 1:
        return _fail("plot", ValueError("--top must be at least 1"))
    try:
        rel = open_release(args.release, verify=not args.no_verify)
        if callable(getattr(rel, "plot_bars", None)):  # a statements kind that draws its own bars (groups)
            return _plot_bars(args, rel.plot_bars(args.top), rel.manifest.rng_test_only)
        if not hasattr(rel, "table"):
            raise ParameterError(
                "plot draws the released bins of a sparse release; a compact release has a noisy count for every "
                "key of the universe and no list of bins: use 'dpspark lookup RELEASE KEY...' for the keys you need"
            )
        table = rel.table()
    except DPSparkError as err:
        return _fail("plot", err)
    from dpspark.cli.plotfont import covered, drawable_label, font_chain

    counts = table.column("noisy_count").to_numpy()
    below = rel.below_threshold(counts)
    hidden = 0 if args.show_below_threshold else int(below.sum())
    candidates = np.arange(len(counts)) if args.show_below_threshold else np.flatnonzero(~below)
    order = candidates[np.argsort(-counts[candidates], kind="stable")[: args.top]]
    if args.order == "universe":
        order = np.sort(order)  # the bins are stored ascending by universe index
    top = table.take(order)
    chain = font_chain()
    drawable = covered(chain)
    labels = [drawable_label(lab, drawable) for lab in _labels(top, rel.manifest)]
    values = top.column("noisy_count").to_numpy()
    marked = below[order]
    acc = rel.accuracy
    with matplotlib.rc_context({"font.family": chain}):
        fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(values) + 2), 4.5))
        positions = np.arange(len(values))
        colors = ["#bbbbbb" if m else "#4c72b0" for m in marked]
        ax.bar(positions, values, yerr=acc.a_per_query, capsize=3, color=colors, ecolor="#333333")
        if acc.per_query_above >= 0:
            ax.axhline(acc.per_query_above, color="#c44e52", linestyle="--", linewidth=1,
                       label=f"threshold {acc.per_query_above} (bar holds above)")
            if marked.any():
                ax.bar([], [], color="#bbbbbb", label="below threshold: may be noise")
            ax.legend(loc="upper right", fontsize=8)
        ax.set_xticks(positions)
        ax.set_xticklabels([lab if len(lab) <= 24 else lab[:23] + "~" for lab in labels], rotation=60, ha="right",
                           fontsize=8)
        ax.set_xlabel(", ".join(rel.manifest.key_columns)
                      + (" (universe order)" if args.order == "universe" else " (largest noisy count first)"))
        ax.set_ylabel(count_label(rel.manifest.raw.get("config") or {}), fontsize=8)
        eps = rel.manifest.add_remove.epsilon_float()  # report
        shown = "" if eps is None else f", eps ~ {eps:.3g}"  # report
        note = f"; {hidden} bins below threshold hidden" if hidden else ""
        ax.set_title(f"top {len(values)} bins, +-{acc.a_per_query} per key (beta = {short(acc.beta_per_query)}){shown}"
                     + note + (" [TEST RNG]" if rel.manifest.rng_test_only else ""), fontsize=9)
        fig.tight_layout()
        try:
            fig.savefig(args.output, format="png", dpi=args.dpi)
        except OSError as err:
            return _fail("plot", OSError(f"{args.output}: cannot write the PNG ({err.strerror})"))
        finally:
            plt.close(fig)
    extra = f"; {hidden} bins below the threshold hidden (--show-below-threshold draws them)" if hidden else ""
    print(f"wrote {args.output} ({len(values)} bins{extra})")
    return 0


def _plot_bars(args: argparse.Namespace, panels: list[dict[str, Any]], test_rng: bool) -> int:
    """Draw a reader's bar panels (one per quantity: ``title``, ``labels``, ``values``, ``errors``, ``ylabel``,
    ``xlabel``, optionally ``muted``: bars drawn grey) with error bars, one under the other, as a PNG."""
    import matplotlib
    import matplotlib.pyplot as plt
    import numpy as np

    from dpspark.cli.plotfont import covered, drawable_label, font_chain

    chain = font_chain()
    drawable = covered(chain)
    width = max(6.0, 0.45 * max((len(p["values"]) for p in panels), default=1) + 2)
    with matplotlib.rc_context({"font.family": chain}):
        fig, axes = plt.subplots(len(panels), 1, figsize=(width, 3.2 * len(panels)), squeeze=False)
        for ax, p in zip(axes[:, 0], panels):
            positions = np.arange(len(p["values"]))
            muted = p.get("muted") or [False] * len(p["values"])
            colors = ["#c8c8c8" if m else "#4c72b0" for m in muted]  # grey: a value its own bar calls uninformative
            ax.bar(positions, p["values"], yerr=p["errors"], capsize=3, color=colors, ecolor="#333333")
            ax.set_xticks(positions)
            labels = [drawable_label(lab, drawable) for lab in p["labels"]]
            ax.set_xticklabels([lab if len(lab) <= 24 else lab[:23] + "~" for lab in labels], rotation=60,
                               ha="right", fontsize=8)
            ax.set_xlabel(p["xlabel"], fontsize=8)
            ax.set_ylabel(p["ylabel"], fontsize=8)
            ax.set_title(p["title"] + (" [TEST RNG]" if test_rng else ""), fontsize=9)
        fig.tight_layout()
        try:
            fig.savefig(args.output, format="png", dpi=args.dpi)
        except OSError as err:
            return _fail("plot", OSError(f"{args.output}: cannot write the PNG ({err.strerror})"))
        finally:
            plt.close(fig)
    print(f"wrote {args.output} ({len(panels)} panel(s), {max((len(p['values']) for p in panels), default=0)} bars each)")
    return 0


def add_plot_command(subparsers: Any) -> None:
    """Register ``plot`` on the ``dpspark`` command's subparsers."""
    pl = command_parser(subparsers, "plot", "draw a histogram's top-K bins (or a groups release's aggregates) with "
                                        "their error bars as a PNG (needs matplotlib)",
                 ["dpspark plot releases/queries -o top.png",
                  "dpspark plot releases/ages --top 121 --order universe -o ages.png"],
                 "Bins whose noisy count is at or below the accuracy threshold may be noise (pure_sparse releases\n"
                 "hold such bins by design); they are hidden unless --show-below-threshold.\n")
    pl.add_argument("release", help="release directory")
    pl.add_argument("--top", type=int, default=20, help="number of bins to draw (default 20)")
    pl.add_argument("--order", choices=["count", "universe"], default="count",
                    help="bar order: largest noisy count first (default), or the universe's order (int ranges, "
                         "categorical lists) for the top-K bins")
    pl.add_argument("--show-below-threshold", action="store_true",
                    help="also draw bins at or below the accuracy threshold (grey: they may be noise)")
    pl.add_argument("-o", "--output", required=True, help="output PNG file")
    pl.add_argument("--dpi", type=int, default=100, help="resolution (default 100)")
    pl.add_argument("--no-verify", action="store_true", help=NO_VERIFY_HELP)
    pl.set_defaults(func=_cmd_plot)
