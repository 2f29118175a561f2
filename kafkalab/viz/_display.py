"""Choosing between a live ipywidget and a static figure."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

STATIC_ENV = "KAFKALAB_STATIC_WIDGETS"


def static_widgets() -> bool:
    """True when widgets should render as static figures (no live frontend expected)."""
    return os.environ.get(STATIC_ENV, "") not in ("", "0", "false", "no")


def show(live: Callable[[], Any], static: Callable[[], Any]) -> Any:
    """Display ``live()`` (an ipywidget) or, in static mode, ``static()`` (a matplotlib figure).

    Both are factories so that only the chosen one is built. Returns what was displayed.
    """
    from IPython.display import display

    if static_widgets():
        import matplotlib.pyplot as plt

        figure = static()
        display(figure)
        plt.close(figure)
        return figure
    widget = live()
    display(widget)
    return widget
