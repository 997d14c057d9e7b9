"""dpspark: exact differentially private histogram releases over huge universes."""

__version__ = "0.1.0"
