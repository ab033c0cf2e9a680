"""Closed-form equations of motion derived symbolically (sympy)."""
from .derive import *  # noqa: F401,F403
