"""dpspark.mechanisms.gaussian_model: created by the issue-21 layout move (a curated __init__ is left for later)."""
