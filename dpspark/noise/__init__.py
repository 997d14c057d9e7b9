"""Noise samplers with certified laws: strict-time, exact integer arithmetic, one uniform draw per sample.

* counting mechanisms M(c, u) of Balcer-Vadhan section 4: :class:`GeoSample`, :class:`FastSample`
  (base class :class:`CountingMechanism`; the public exp(eps) grid in :func:`choose_exp_eps`);
* the discrete Gaussian of the zCDP families (:class:`DiscreteGaussian`) with the certificate of its
  implemented law (:func:`certify`) and the public grid helpers;
* Dagan-Kur bounded noise (:class:`BoundedNoise`) and its certified calibration (:func:`calibrate`).

Every name is imported lazily (:mod:`dpspark._lazy`): ``from dpspark.noise import GeoSample`` loads the
GeoSample module only, so the read side never loads python-flint (the certificates need it).
"""

from dpspark._lazy import lazy_exports

_NAMES = {
    # counting mechanisms (Balcer-Vadhan)
    "CountingMechanism": "counting_base",
    "FastSample": "fastsample",
    "GeoSample": "geosample",
    "choose_exp_eps": "exp_eps",
    "exp_eps_at_most": "exp_eps",
    "parse_gamma": "fastsample",
    "tight_t": "fastsample",
    "truncation_condition": "fastsample",
    # discrete Gaussian
    "DGaussError": "dgauss",
    "DiscreteGaussian": "dgauss",
    "l2_rho": "dgauss",
    "sigma_grid_next": "dgauss",
    "smallest_sigma": "dgauss",
    "vector_rho": "dgauss",
    "Certificate": "dgauss_certify",
    "ShiftBound": "dgauss_certify",
    "certified_table": "dgauss_certify",
    "certify": "dgauss_certify",
    "grid_bound": "dgauss_certify",
    "grid_sensitivity": "grid",
    "sqrt_upper": "grid",
    "to_grid": "grid",
    "to_grid_int64": "grid",
    # bounded noise
    "BoundedNoise": "bounded",
    "BoundedNoiseError": "bounded",
    "Calibration": "bounded_calibrate",
    "CalibrationRefused": "bounded_calibrate",
    "calibrate": "bounded_calibrate",
}
__getattr__ = lazy_exports(__name__, _NAMES)

__all__ = [
    "BoundedNoise",
    "BoundedNoiseError",
    "Calibration",
    "CalibrationRefused",
    "Certificate",
    "CountingMechanism",
    "DGaussError",
    "DiscreteGaussian",
    "FastSample",
    "GeoSample",
    "ShiftBound",
    "calibrate",
    "certified_table",
    "certify",
    "choose_exp_eps",
    "exp_eps_at_most",
    "grid_bound",
    "grid_sensitivity",
    "l2_rho",
    "parse_gamma",
    "sigma_grid_next",
    "smallest_sigma",
    "sqrt_upper",
    "tight_t",
    "to_grid",
    "to_grid_int64",
    "truncation_condition",
    "vector_rho",
]
