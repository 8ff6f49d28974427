"""matplotlib for the result plots, off-screen."""
from __future__ import annotations


def pyplot():
    """``matplotlib.pyplot`` with the off-screen Agg backend, imported on first use (0.6 s
    of import that only runs with ``output.plots``)."""
    import matplotlib.pyplot as plt  # lazy: heavy (0.6 s), only when plots are asked for
    plt.switch_backend("Agg")
    return plt
