"""Numbers as the book prints them: rounded to what the sentence needs, one format for
every page (prose through glue, outputs through print), never a float's full repr."""
from __future__ import annotations

import math

import numpy as np


def fmt(x: float, digits: int = 2) -> str:
    """``x`` to ``digits`` significant digits: 3.3e-09, 0.121 (digits=3), 42, 0.

    Zero is ``0`` (not 0.0e+00); magnitudes below 0.001 or from 100,000 on are written
    in scientific notation; integers keep all their digits (1,234,567 stays exact).
    """
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    size = abs(x)
    if size < 1e-3 or size >= 1e5:
        return f"{x:.{digits - 1}e}"
    decimals = max(0, digits - 1 - math.floor(math.log10(size)))
    return f"{x:.{decimals}f}"


def short_arrays(precision: int = 4) -> None:
    """NumPy prints arrays with ``precision`` decimals, no scientific notation for small
    entries, and lines that fit the book's 80-column box."""
    np.set_printoptions(precision=precision, suppress=True, linewidth=80)
