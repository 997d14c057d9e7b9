"""Registered Gaussian learners (KLSU, COLT 2019): ``gaussian_covariance``, ``gaussian_mean``, ``gaussian_learner``.

Config: a ``[gaussian]`` section and ``[privacy]`` with ``unit_column`` (required: pairs and singles are
keyed on the unit id), ``max_units``, ``epsilon``, ``delta`` (required) and optionally ``rho``::

    [gaussian]
    columns = ["x0", "x1"]     # the d real columns
    radius = "100"             # public R with ||mu||_2 <= R
    kappa = "1000"             # public kappa with I <= Sigma <= kappa I
    scale_bits = 20            # optional: b, values become round(v 2^b) (default: the largest b <= 24
                               #   with 2^b (R + 12 sqrt(kappa)) <= 2^31, so int32 holds a Gaussian row)
    buckets = 1000000          # optional: shuffle buckets of the preparation (default max_units)
    covariance = [["1", "0"], ["0", "1"]]   # gaussian_mean only: a KNOWN covariance (else estimated by PPC)
    alpha = "1/10"             # optional: the target error (default 1/10) of the stated sample size
    beta = "1/1000000"         # optional: its failure probability (default privacy.beta)
    nulls = "drop"             # optional: "drop" (default) or a public value ("0", "1/2") for a missing value

Missing values (one rule, :mod:`dpspark.engine.numeric`): a column is read by an infallible cast (text in a
CSV/JSON input: a plain decimal number, anything else is unparseable); NULL, NaN and unparseable text are
missing. ``nulls = "drop"``: a row with a missing value in any of the d columns is removed before the units
are grouped (it is not a single, nor counted); a public value instead replaces each missing coordinate.
Either is a per-row map that depends on that row alone, so adding or removing a unit still adds or removes
at most one single (a unit with exactly one row; :mod:`dpspark.mechanisms.gaussian_model.source`) and every
sensitivity below is unchanged. +-inf (and any huge value) is clipped to the public fixed-point bound
+-(2^31 - 1) / 2^b. ``buckets`` only spreads the units over the preparation's shuffle (default max_units).

Units and n (issue 25 §1.1): every estimate divides by a NOISY count of the singles, never by max_units, so
data holding fewer units than ``max_units`` are not biased (max_units only bounds the noise windows and the
decimal capacity, and sets the public round schedule); tests/unit/gaussian_model/test_gaussian_accuracy.py
checks a run at max_units = 4 n.

The algorithm (:mod:`.covariance`, :mod:`.mean`): a noisy count of the singles; a coarse l2-clipped mean in
A_0 = I / sqrt(kappa); covariance passes over every single centred on it, ball-clipped at a per-row
Laurent-Massart tail (a whitened Gaussian row is clipped w.p. <= 1/20: a bias, never a privacy condition),
with preconditioning rounds A <- (Z + e I)^-1/2 A whose number is public (kappa, d, max_units, rho: none at
small kappa); then the mean, l2-clipped around the coarse centre in the coordinates Sigma^^-1/2, and the
centring term (mu^ - mu~)(mu^ - mu~)^T removed from Sigma^ (post-processing).

Accuracy target: :mod:`dpspark.mechanisms.gaussian_model.sample_size` derives, without data, the N at which the
stated error bound is <= alpha w.p. >= 1 - beta for every kind (the estimated-covariance kinds in
:mod:`dpspark.mechanisms.gaussian_model.sample_size_estimated`: explicit tail bounds, and a public interval for
the spectrum of each pass's A Sigma A^T that does not assume the rounds' typical allowance holds). The plan
(``--dry-run``) states N and the release adds the model-error claim "error <= alpha w.p. >= 1 - beta given >= N
units" when N <= max_units; the release also keeps the certified per-coordinate noise bound of its last pass.
The bound is conservative (docs/gaussian.md gives N next to measured errors).

Scale: b as above; rounding moves each coordinate by <= 2^-(b+1), i.e. changes the second moment by
about d 2^-(2b+2) in trace - negligible against Sigma >= I for b >= 8 (smaller b is refused).

Privacy claim: rho-zCDP under adding or removing one unit (Bun-Steinke), rho the exact sum of the
certified rho of every noise addition (the discrete Gaussian of Canonne-Kamath-Steinke 2020, Thm 14,
certified on the implemented law; composition Bun-Steinke Lemma 2.3); the sensitivities are exact
integers, the clip of each pass (see :mod:`dpspark.mechanisms.gaussian_model.covariance`,
:mod:`dpspark.mechanisms.gaussian_model.mean`). rho is chosen by ``rho_within`` so that its CKS20 conversion
is certified within (epsilon, delta); replacement follows by group privacy (4 rho).

Budget split (public, :data:`~dpspark.mechanisms.gaussian_model.budget.SPLITS`): every kind spends 1/50 on the single count and 1/16 on the coarse mean
(1/8 with a known covariance); ``gaussian_covariance`` the rest on the covariance passes;
``gaussian_mean`` 3/8 on them and the rest on the mean; ``gaussian_learner`` 1/2 on them and the rest on the
mean. Each preconditioning round takes 3/20 of the covariance share, the final pass the rest.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dpspark.engine.numeric import numeric_type_problem, parse_null_rule
from dpspark.exact import parse_rational
from dpspark.mechanisms.gaussian_model.covariance import (ROUND_SHARE, PublicBounds, Run, covariance_rounds, initial_matrix,
                                                          max_threshold, noisy_count, predicted_rounds, psd_project,
                                                          round_rhos)
from dpspark.mechanisms.gaussian_model.budget import SPLITS
from dpspark.mechanisms.gaussian_model.fixed import ceil_frac, choose_scales, default_data_bits, ln_upper
from dpspark.mechanisms.gaussian_model.mean import coarse_mean, fine_mean, whitening
from dpspark.mechanisms.gaussian_model.sample_size import (DERIVED, NOT_DERIVED, mechanism_scales, release_error_bound,
                                                          release_events, release_sample_size, tested_beta)
from dpspark.mechanisms.gaussian_model.section import noise_unit
from dpspark.mechanisms.base import Mechanism, MechanismSpecError, StageInfo
from dpspark.mechanisms.zcdp_budget import converted_epsilon, rho_option, rho_within
from dpspark.noise.grid import sqrt_upper

KIND = "gaussian_model"
#: the default target error of the stated sample size (the benchmark target of issue 13, docs/gaussian.md)
DEFAULT_ALPHA = Fraction(1, 10)


def _rational_list(raw: Any, name: str) -> list[Fraction]:
    if not isinstance(raw, list):
        raise TypeError(f"gaussian.{name} must be a list")
    return [parse_rational(v, name) for v in raw]


def parse_gaussian(raw: Any) -> dict[str, Any]:
    """The ``[gaussian]`` section, validated (exact rationals; a float is a TypeError)."""
    if not isinstance(raw, dict):
        raise ValueError("[gaussian] must be a table")
    allowed = {"columns", "radius", "kappa", "scale_bits", "buckets", "covariance", "alpha", "beta", "nulls"}
    extra = set(raw) - allowed
    if extra:
        raise ValueError(f"[gaussian] has unknown keys {sorted(extra)} (allowed: {sorted(allowed)})")
    cols = raw.get("columns")
    if not isinstance(cols, list) or not cols or not all(isinstance(c, str) and c for c in cols) or len(set(cols)) != len(cols):
        raise ValueError("gaussian.columns must be a non-empty list of distinct column names")
    out: dict[str, Any] = {"columns": list(cols)}
    from dpspark.engine.numeric import parse_null_rule

    out["nulls"] = parse_null_rule(raw.get("nulls"), "gaussian")
    for key in ("radius", "kappa"):
        if key not in raw:
            raise ValueError(f"gaussian.{key} is required (a public bound)")
        out[key] = parse_rational(raw[key], f"gaussian.{key}")
    if out["radius"] < 0 or out["kappa"] < 1:
        raise ValueError("gaussian.radius must be >= 0 and gaussian.kappa >= 1")
    out["alpha"] = parse_rational(raw.get("alpha", DEFAULT_ALPHA), "gaussian.alpha")
    out["beta"] = parse_rational(raw["beta"], "gaussian.beta") if "beta" in raw else None
    if out["alpha"] <= 0 or (out["beta"] is not None and not 0 < out["beta"] < 1):
        raise ValueError("gaussian.alpha must be > 0 and gaussian.beta in (0, 1)")
    for key in ("scale_bits", "buckets"):
        v = raw.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ValueError(f"gaussian.{key} must be a positive integer")
        out[key] = v
    if out["scale_bits"] is not None and not 8 <= out["scale_bits"] <= 24:
        raise ValueError("gaussian.scale_bits must lie in [8, 24]")
    cov = raw.get("covariance")
    if cov is not None:
        if not isinstance(cov, list) or len(cov) != len(cols):
            raise ValueError("gaussian.covariance must be a d x d list of rationals")
        out["covariance"] = [_rational_list(row, "gaussian.covariance") for row in cov]
        if any(len(r) != len(cols) for r in out["covariance"]):
            raise ValueError("gaussian.covariance must be a d x d list of rationals")
    else:
        out["covariance"] = None
    return out


class _GaussianBase(Mechanism):
    """Shared plan, budget and release of the three Gaussian learners."""

    release_kind: ClassVar[str] = KIND
    delta: ClassVar[str] = "required"
    needs_keys: ClassVar[bool] = False
    options: ClassVar[dict[str, Any]] = {"rho": None}
    reads_every_unit: ClassVar[bool] = True  # no unit removed: on_excess_units = "refuse" is refused
    option_parsers: ClassVar[dict[str, Any]] = {"rho": rho_option}
    sections: ClassVar[dict[str, Any]] = {"gaussian": parse_gaussian}
    estimates: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        if "gaussian" not in spec.sections:
            raise MechanismSpecError(f"mechanism {self.name!r} needs a [gaussian] section")
        if spec.unit_column is None:
            raise MechanismSpecError(f"mechanism {self.name!r} needs privacy.unit_column: pairs are keyed on the unit id")
        g = spec.sections["gaussian"]
        self.g = g
        self.rho = rho_within(spec.epsilon, spec.delta, spec.options.get("rho"))
        self.alpha = g["alpha"]
        self.accuracy_beta = g["beta"] if g["beta"] is not None else spec.beta
        threshold_beta = tested_beta(self.accuracy_beta, release_events(self.size_kind()))
        self.bounds = PublicBounds(len(g["columns"]), g["radius"], g["kappa"], threshold_beta, spec.max_units)
        self._sizes: tuple[int | None, int | None] | None = None
        try:
            self.data_bits = g["scale_bits"] or default_data_bits(g["radius"], g["kappa"])
            top = max_threshold(self.bounds.d, g["radius"])
            self.scales = choose_scales(self.data_bits, top, 2 * spec.max_units)
            initial_matrix(self.bounds, self.scales.matrix_bits)  # refuses a kappa the matrix scale cannot hold
        except ValueError as exc:
            raise MechanismSpecError(str(exc)) from None
        self.buckets = g["buckets"] or spec.max_units
        self.nulls = g.get("nulls") or parse_null_rule(None, "gaussian")

    # --- public, data-free -------------------------------------------------------------------
    def pass_names(self) -> list[str]:
        """The passes, in order (data-free)."""
        return []

    def size_kind(self) -> str:
        """The :func:`~dpspark.mechanisms.gaussian_model.sample_size.release_error_bound` kind of this release."""
        return self.name

    def sample_sizes(self) -> tuple[int | None, int | None]:
        """(N at this max_units and buckets or None, N of the configuration max_units = buckets = N); data-free."""
        if self._sizes is None:
            b = self.bounds
            args = (self.size_kind(), b.d, self.alpha, self.accuracy_beta, self.rho, b.kappa, b.radius)
            at = release_sample_size(*args, max_units=b.max_units, buckets=self.buckets,
                                     scale_bits=self.g["scale_bits"], bounds_beta=b.beta)
            alone = at if at is not None and self.buckets == b.max_units else \
                release_sample_size(*args, scale_bits=self.g["scale_bits"])
            self._sizes = (at, alone)
        return self._sizes

    def accuracy_target(self) -> dict[str, Any]:
        """alpha, beta, the metric(s) and N (data-free; see the module docstring)."""
        at, alone = self.sample_sizes()
        metric = {"gaussian_covariance": "||Sigma^-1/2 Sigma^ Sigma^-1/2 - I||_F",
                  "gaussian_learner": "||Sigma^-1/2 Sigma^ Sigma^-1/2 - I||_F and ||Sigma^-1/2 (mu^ - mu)||_2"}.get(
                      self.name, "||Sigma^-1/2 (mu^ - mu)||_2")
        if at is not None:
            text = f"{metric} <= {self.alpha} with probability >= 1 - {self.accuracy_beta} once n >= {at} units"
        elif self.size_kind() in DERIVED:
            text = self.too_small_text(metric, alone)
        else:
            text = f"{metric}: {NOT_DERIVED}"
        return {"alpha": self.alpha, "beta": self.accuracy_beta, "metric": metric, "sample_size": at,
                "sample_size_if_max_units_is_n": alone, "threshold_beta": self.bounds.beta, "text": text,
                "derivation": "dpspark.mechanisms.gaussian_model.sample_size"}

    def supported_target(self) -> float | None:
        """The smallest error the stated bound reaches at n = max_units units (w.p. >= 1 - beta), None if none."""
        import math

        b = self.bounds
        try:
            sc = mechanism_scales(b.d, b.radius, b.kappa, b.max_units, self.g["scale_bits"])
            err = release_error_bound(self.size_kind(), b.max_units, b.d, self.accuracy_beta, self.rho, b.kappa,
                                      b.radius, sc, b.max_units)  # report
        except ValueError:
            return None
        return err if math.isfinite(err) else None  # report

    def too_small_text(self, metric: str, alone: int | None) -> str:
        """The target is out of reach: the data (at most max_units units) are too small for it; say what they support."""
        n = self.bounds.max_units
        need = f" (it needs about {alone} units)" if alone else ""
        best = self.supported_target()
        if best is None:
            supports = "no error target is reached at this size, rho and kappa"
        else:
            from dpspark.text import bound_text

            shown = bound_text(Fraction(best))  # report: the float bound, rounded up
            shown = "<= " + shown[2:] if shown.startswith("= ") else shown
            supports = (f"at most {n} units support {metric} {shown} w.p. >= 1 - {self.accuracy_beta}: set "
                        "gaussian.alpha to that or more, or raise the budget")
        return (f"the data are too small for the target {metric} <= {self.alpha} w.p. >= 1 - {self.accuracy_beta}"
                f"{need}: max_units = {n} says they hold at most {n} units, and raising max_units above the data's "
                f"size does not help; {supports}")

    def plan(self) -> dict[str, Any]:
        return {"mechanism": self.name, "rho": self.rho, "dimension": self.bounds.d, "radius": self.bounds.radius,
                "kappa": self.bounds.kappa, "beta": self.spec.beta, "threshold_beta": self.bounds.beta,
                "data_bits": self.scales.data_bits,
                "matrix_bits": self.scales.matrix_bits, "buckets": self.buckets,
                "passes": len(self.pass_names()), "pass_names": self.pass_names(), "split": self.split_text(),
                "nulls": self.nulls.describe(), "nulls_rule": self.nulls.text(),
                "accuracy_target": self.accuracy_target()}

    def split_text(self) -> str:
        """The budget split in words."""
        return ""

    def planned_statement(self) -> Any:
        """rho-zCDP under AddRemove(max_units) at the planned rho, before any data: the release states the composed
        rho of its run, which is at most this (the ledger records it: dpspark.ledger.statement)."""
        from dpspark.privacy import AddRemove, PrivacyStatement, ZCDP

        return PrivacyStatement(ZCDP(self.rho), AddRemove(self.spec.max_units), "the planned rho (an upper bound on "
                                "the composed rho the release states)")

    def privacy_summary(self) -> dict[str, Any]:
        return {"rho_at_most": str(self.rho), "epsilon": str(converted_epsilon(self.rho, self.spec.delta)),
                "delta": str(self.spec.delta)}

    def accuracy_summary(self) -> dict[str, Any]:
        return {"theorem": "KLSU 2019 (structure); CoinPress 2020 steps; N derived from explicit tail bounds",
                **self.accuracy_target()}

    def model_claims(self) -> list[Any]:
        """The release's model-error claims: error <= alpha w.p. >= 1 - beta given >= N units (none if N is None)."""
        from dpspark.privacy import AccuracyClaim

        at, _ = self.sample_sizes()
        if at is None:
            return []
        quantities = {"gaussian_covariance": ["whitened_frobenius_error"],
                      "gaussian_learner": ["whitened_frobenius_error", "mahalanobis_error"]}.get(self.name, ["mahalanobis_error"])
        cond = ("n i.i.d. rows N(mu, Sigma), one per unit, with ||mu|| <= radius and I <= Sigma <= kappa I; "
                "derived from the stated tail bounds (dpspark.mechanisms.gaussian_model.sample_size)")
        if len(quantities) == 2:
            cond += "; both bounds hold together"
        return [AccuracyClaim(q, self.alpha, self.accuracy_beta, "output", min_units=at, condition=cond) for q in quantities]

    def stages(self) -> list[StageInfo]:
        from dpspark.mechanisms.gaussian_model.stage import GaussianPairsStage

        # the first pass prepares pairs and singles from the input; the later ones read them
        return [StageInfo(n, n, depends_on_previous=i > 0, stage=GaussianPairsStage, reads_input=i == 0)
                for i, n in enumerate(self.pass_names())]

    def input_columns(self) -> tuple[str, ...]:
        """The d real columns and the unit column."""
        return tuple(self.g["columns"]) + super().input_columns()

    def input_schema_problem(self, schema: Any, *, text_input: bool = False) -> str | None:
        """Every [gaussian] column must be numeric (text only in CSV/JSON): the schema alone, before any spend."""
        for c in self.g["columns"]:
            if c in schema.names:
                problem = numeric_type_problem(schema.field(c).type, c, text_input=text_input)
                if problem:
                    return f"gaussian.columns: {problem}"
        return None

    # --- with data ---------------------------------------------------------------------------
    def _source(self, backend: Any) -> Any:
        from dpspark.mechanisms.gaussian_model.stage import GaussianPairsStage

        return backend.compute(GaussianPairsStage(tuple(self.g["columns"]), self.spec.unit_column,
                                                  self.scales.data_bits, self.buckets, self.spec.max_units,
                                                  self.nulls))

    def learn(self, run: Run) -> dict[str, np.ndarray]:
        """The private estimates (override)."""
        raise NotImplementedError

    def run(self, backend: Any, rng: Any, progress: Any) -> Any:
        import pyarrow as pa

        from dpspark.privacy import AccuracyClaim, AccuracyStatement, AddRemove, PrivacyStatement, ZCDP
        from dpspark.release.statements import StatementRelease, standard_statements

        source = self._source(backend)
        try:
            run = Run(source, self.scales, self.bounds, rng)
            est = self.learn(run)
        finally:
            source.close()
        if run.rho > self.rho:  # pragma: no cover - every share is a fraction of self.rho
            raise MechanismSpecError("internal error: the composed rho exceeds the budget")
        primary = PrivacyStatement(ZCDP(run.rho), AddRemove(self.spec.max_units),
                                   "KLSU 2019 (zCDP composition of exact-sensitivity aggregates) with the discrete Gaussian "
                                   "of Canonne-Kamath-Steinke 2020, certified on the implemented law")
        tables: dict[str, Any] = {}
        d = self.bounds.d
        if "mean" in est:
            tables["mean"] = pa.table({"column": self.g["columns"], "value": [float(v) for v in est["mean"]]})  # report
        if "covariance" in est:
            c = est["covariance"]
            tables["covariance"] = pa.table({"i": [i for i in range(d) for _ in range(d)], "j": list(range(d)) * d,
                                             "value": [float(c[i, j]) for i in range(d) for j in range(d)]})  # report
        last = run.noises[-1]
        x = ln_upper(Fraction(2 * last.dims) / self.spec.beta)
        bound = last.grid * ceil_frac(last.sampler.sigma * sqrt_upper(2 * x, 32))
        unit = noise_unit(last.label, self.scales.data_bits, self.scales.matrix_bits)
        what, bits = unit if unit is not None else (f"{last.label}, in its integer units", 0)
        # in the data's units (as inspect writes it), never the fixed-point integers (issue 36 §2)
        claim = AccuracyClaim("abs_error", Fraction(bound, 1 << bits), self.spec.beta, "simultaneous",
                              condition=f"noise added to each coordinate of the last pass ({what}; the discrete "
                                        "Gaussian is sigma-subgaussian, CKS20); the model's error follows KLSU "
                                        "Thm 1.1 at large enough n")
        clipping = self.clipping(run)
        notes = self.accuracy_target()["text"]
        if clipping["warning"]:
            notes = clipping["warning"] + ". " + notes
        section = {"dimension": d, "columns": self.g["columns"], "estimates": sorted(est), "rho": run.rho,
                   "rho_by_noise": [n.rho for n in run.noises], "passes": run.source.passes,
                   "pass_log": run.passes, "noise": [n.describe() for n in run.noises], "radius": self.bounds.radius,
                   "kappa": self.bounds.kappa, "data_bits": self.scales.data_bits, "matrix_bits": self.scales.matrix_bits,
                   "values": "float64 (post-processing of the exact noisy integers)", "units_used": "every single (a unit with exactly one row)"}
        if clipping["passes"]:
            section["clipping"] = clipping
        return StatementRelease(
            algorithm=self.algorithm, parameters=self.plan(),
            privacy=standard_statements(primary, delta=self.spec.delta),
            accuracy=AccuracyStatement([claim, *self.model_claims()], notes=notes),
            section=section, tables=tables)

    def clipping(self, run: Run) -> dict[str, Any]:
        """The covariance passes' clipped rows (noisy single count minus each pass's noisy kept count) and the
        warning when more were clipped than Gaussian rows would be (:mod:`.clipping`; post-processing)."""
        from dpspark.mechanisms.gaussian_model.clipping import clip_summary, clip_warning, gaussian_clip_rate

        i = next((k for k, nz in enumerate(run.noises) if nz.label == "single count"), None)
        if i is None:
            return {"passes": [], "warning": ""}
        d = self.bounds.d
        singles = max(1, run.outputs[i][0])
        nz = run.noises[i]
        summary = clip_summary(run.passes, d, singles, float(nz.grid * nz.sampler.sigma))  # report
        return {"noisy_singles": singles, "gaussian_rate": f"{gaussian_clip_rate(d):.3g}",  # report
                "passes": [{"pass": s["pass"], "noisy_clipped": s["clipped"], "above_gaussian": s["above_gaussian"],
                            "gaussian_rate": f"{s['rate']:.3g}"} for s in summary],  # report
                "warning": clip_warning(summary, self.g["columns"], d)}

    algorithm: ClassVar[str] = ""


def split_words(kind: str) -> str:
    """A split in words (the plan)."""
    s = SPLITS[kind]
    mean = 1 - s.count - s.coarse - s.covariance
    words = [f"{s.count} single count", f"{s.coarse} coarse mean"]
    if s.covariance:
        words.append(f"{s.covariance} covariance ({ROUND_SHARE} of it per preconditioning round, the rest the final pass)")
    if mean:
        words.append(f"{mean} the mean")
    return ", ".join(words)


def estimate_covariance(run: Run, kind: str, rho: Fraction) -> tuple[np.ndarray, Any, int]:
    """count, coarse mean, covariance rounds: (Sigma^, the coarse centre, the noisy count)."""
    b = run.bounds
    count_rho, coarse_rho, cov_rho, _ = SPLITS[kind].parts(rho)
    count = noisy_count(run, count_rho)
    centre = coarse_mean(run, coarse_rho, count)
    rounds = predicted_rounds(b.d, b.kappa, b.max_units, cov_rho)
    cov, _ = covariance_rounds(run, round_rhos(cov_rho, rounds), centre.value, centre.sd, count)
    return cov, centre, count


class GaussianCovariance(_GaussianBase):
    """Private covariance: singles centred on a private mean, preconditioning rounds, a final pass."""

    name: ClassVar[str] = "gaussian_covariance"
    algorithm: ClassVar[str] = ("KLSU 2019 PCE (recursive private preconditioning) with CoinPress's whitening step "
                                "(Biswas-Dong-Kamath-Ullman 2020) on all singles, centred on a private mean")

    def rounds(self) -> int:
        """The public number of preconditioning rounds."""
        b = self.bounds
        return predicted_rounds(b.d, b.kappa, b.max_units, SPLITS[self.size_kind()].parts(self.rho)[2])

    def covariance_passes(self) -> list[str]:
        return [f"covariance round {r + 1}" for r in range(self.rounds())] + ["covariance final"]

    def pass_names(self) -> list[str]:
        return ["single count", "coarse mean"] + self.covariance_passes()

    def split_text(self) -> str:
        return split_words(self.size_kind())

    def learn(self, run: Run) -> dict[str, np.ndarray]:
        cov, _, _ = estimate_covariance(run, self.name, self.rho)
        return {"covariance": cov}


class GaussianMean(GaussianCovariance):
    """Private mean: with a known covariance, or preconditioned by the private covariance estimate."""

    name: ClassVar[str] = "gaussian_mean"
    algorithm: ClassVar[str] = ("KLSU 2019 PME with CoinPress's l2-ball mean steps (Biswas-Dong-Kamath-Ullman 2020), "
                                "whitened by the known or privately estimated covariance")

    def pass_names(self) -> list[str]:
        if self.g["covariance"] is not None:
            return ["single count", "coarse mean", "mean"]
        return super().pass_names() + ["mean"]

    def size_kind(self) -> str:
        return "gaussian_mean_known" if self.g["covariance"] is not None else "gaussian_mean"

    def learn(self, run: Run) -> dict[str, np.ndarray]:
        a = self.scales.matrix_bits
        if self.g["covariance"] is not None:
            sigma = np.array([[float(v) for v in row] for row in self.g["covariance"]])  # report: public input
            m = whitening(sigma, a)
            count_rho, coarse_rho, _, mean_rho = SPLITS["gaussian_mean_known"].parts(self.rho)
            count = noisy_count(run, count_rho)
            centre = coarse_mean(run, coarse_rho, count, matrix=m)
            return {"mean": fine_mean(run, m, centre, mean_rho, count)}
        cov, centre, count = estimate_covariance(run, self.name, self.rho)
        mean_rho = SPLITS[self.name].parts(self.rho)[3]
        return {"mean": fine_mean(run, whitening(cov, a), centre, mean_rho, count)}


class GaussianLearner(GaussianCovariance):
    """Mean and covariance (KLSU Thm 1.1 structure): the covariance, then the mean whitened by it."""

    name: ClassVar[str] = "gaussian_learner"
    algorithm: ClassVar[str] = ("KLSU 2019 Thm 1.1 structure with CoinPress steps (Biswas-Dong-Kamath-Ullman 2020): "
                                "covariance of all singles centred on a private mean, then the l2-ball mean whitened by it")

    def pass_names(self) -> list[str]:
        return super().pass_names() + ["mean"]

    def learn(self, run: Run) -> dict[str, np.ndarray]:
        cov, centre, count = estimate_covariance(run, self.name, self.rho)
        mean_rho = SPLITS[self.name].parts(self.rho)[3]
        mean = fine_mean(run, whitening(cov, self.scales.matrix_bits), centre, mean_rho, count)
        # the final pass centred on mu~ estimates Sigma + (xbar - mu~)(xbar - mu~)^T: remove the second term with
        # the private mean (post-processing; it leaves an error of order ||xbar - mu^|| ||mu~ - mu||)
        shift = mean - centre.value  # report
        return {"covariance": psd_project(cov - np.outer(shift, shift)), "mean": mean}  # report


def learn_on(kind: str, source: Any, bounds: PublicBounds, scales: Any, rho: Fraction, *, seed: Any = 0,
             covariance: Any = None) -> tuple[dict[str, np.ndarray], Run]:
    """Run a registered Gaussian release's algorithm (``learn``) on a prepared source (benchmarks, tests):
    the real discrete Gaussian noise, no config and no release. Returns (estimates, the run)."""
    from dpspark.rng import SeededRandom

    cls = {"gaussian_covariance": GaussianCovariance, "gaussian_mean": GaussianMean,
           "gaussian_learner": GaussianLearner}[kind]
    mech = cls.__new__(cls)  # the algorithm only
    mech.rho, mech.scales, mech.bounds = Fraction(rho), scales, bounds
    mech.g = {"covariance": covariance}
    run = Run(source, scales, bounds, SeededRandom(seed))
    return mech.learn(run), run


def scales_for(d: int, radius: Fraction, kappa: Fraction, units: int) -> Any:
    """The scales a release with these public inputs chooses (default data bits, largest matrix bits)."""
    return choose_scales(default_data_bits(radius, kappa), max_threshold(d, radius), 2 * units)


def learn_in_memory(kind: str, values: np.ndarray, radius: Fraction, kappa: Fraction, rho: Fraction, *,
                    max_units: int | None = None, seed: Any = 0, covariance: Any = None) -> tuple[dict[str, np.ndarray], Run]:
    """:func:`learn_on` an in-memory array, one unit per row (exact aggregates of
    :class:`~dpspark.mechanisms.gaussian_model.source.ArraySource`), with the scales the mechanism would choose."""
    from dpspark.mechanisms.gaussian_model.source import ArraySource

    d = values.shape[1]
    units = max_units or values.shape[0]
    scales = scales_for(d, Fraction(radius), Fraction(kappa), units)
    bounds = PublicBounds(d, Fraction(radius), Fraction(kappa), Fraction(1, 10**6), units)
    return learn_on(kind, ArraySource(values, scales.data_bits, bytes(range(16))), bounds, scales, rho, seed=seed,
                    covariance=covariance)
