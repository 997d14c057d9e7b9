"""Clip bounds chosen privately (issue 32 §2): a pure-DP noisy histogram over signed bit-length cells.

Family-free: the histogram counts come from a family's own pass (after its contribution bounding); this
package calibrates the noise (:mod:`dpspark.bounds.histogram`), defines the cells (:mod:`dpspark.bounds.cells`)
and turns the noisy counts into bounds, a clipped-rows bound and a fixed-point scale.
"""

from dpspark.bounds.cells import CELLS, cell_edges, cell_of
from dpspark.bounds.histogram import BoundsChoice, BoundsLaw, choose_scale_bits

__all__ = ["CELLS", "BoundsChoice", "BoundsLaw", "cell_edges", "cell_of", "choose_scale_bits"]
