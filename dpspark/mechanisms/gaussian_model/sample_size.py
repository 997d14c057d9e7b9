"""PLACEHOLDER (being rewritten)."""
from fractions import Fraction


def tested_beta(beta, events=1):
    return Fraction(beta) / (4 * max(1, events))


def release_events(kind):
    return 1


def release_sample_size(*a, **k):
    return None
