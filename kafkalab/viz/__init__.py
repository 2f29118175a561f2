"""Visualisations for the book: ipywidgets driven by the engine's events, drawn with matplotlib.

Each widget is split in two, so it can be tested without a browser:

* a pure *state* function that turns engine events (or engine objects) into plain data --
  tested with pytest;
* a *view* that draws that data with matplotlib and wires ipywidgets controls to it.

When there is no live frontend -- nbval in CI, ``jupyter nbconvert --execute``, or a reader
looking at stored outputs -- :func:`show` renders a static matplotlib figure of the widget's
initial state instead of a live widget, so outputs stay deterministic. Set the environment
variable ``KAFKALAB_STATIC_WIDGETS=1`` to force static rendering (``make test`` does).

This package imports ipywidgets and matplotlib; ``import kafkalab`` does not import it.
"""

from kafkalab.viz._display import show, static_widgets

__all__ = ["show", "static_widgets"]
