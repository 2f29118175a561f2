"""Choosing between a live ipywidget and a static figure."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
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


FIGURE_CLASS = "kafkalab-figure"
SUMMARY_CLASS = "kafkalab-summary"


class FigurePanel:
    """A live widget's drawing with its text summary next to it.

    Every redraw replaces both: the figure as a PNG whose ``alt`` text is the summary, and the
    summary itself as a visible line marked ``role="status"``, so a screen reader announces what
    changed and a reader who would rather read than look gets the same facts. The summary comes
    from the engine's state, never from the image, which is also what the browser tests read to
    check that moving a control changed the drawing the way the engine says it should.
    """

    def __init__(self, dpi: int = 90) -> None:
        import ipywidgets as widgets

        self.dpi = dpi
        self.image = widgets.HTML()
        self.image.add_class(FIGURE_CLASS)
        self.summary = widgets.HTML()
        self.summary.add_class(SUMMARY_CLASS)
        self.widget = widgets.VBox([self.image, self.summary])
        self.text = ""

    def show(self, figure: Any, summary: str) -> None:
        """Draw ``figure`` (then close it) with ``summary`` as its alt text and caption."""
        import base64
        import html
        import io

        import matplotlib.pyplot as plt

        png = io.BytesIO()
        figure.savefig(png, format="png", dpi=self.dpi)
        plt.close(figure)
        encoded = base64.b64encode(png.getvalue()).decode("ascii")
        alt = html.escape(summary, quote=True)
        self.image.value = f'<img src="data:image/png;base64,{encoded}" alt="{alt}" style="max-width:100%">'
        self.summary.value = f'<p role="status" aria-live="polite">{html.escape(summary)}</p>'
        self.text = summary

    def message(self, text: str) -> None:
        """Replace the drawing with a message (e.g. why the inputs cannot be drawn)."""
        import html

        self.image.value = ""
        self.summary.value = f'<p role="status" aria-live="polite">{html.escape(text)}</p>'
        self.text = text


def action_buttons(actions: Mapping[str, Callable[[], object]], redraw: Callable[[], None]) -> list[Any]:
    """One labelled button per action; a click runs the action, then ``redraw``."""
    import ipywidgets as widgets

    def clicked(action: Callable[[], object]) -> Callable[[object], None]:
        def on_click(_button: object) -> None:
            action()
            redraw()
        return on_click

    buttons = []
    for name, action in actions.items():
        button = widgets.Button(description=name, layout=widgets.Layout(width="auto"))
        button.on_click(clicked(action))
        buttons.append(button)
    return buttons


def show_lab(start: Callable[[], Any], scenario: Callable[[], Any], draw: Callable[[Any], Any]) -> Any:
    """:func:`show` for a widget over a running simulation ("lab"): live, the widget ``start``
    builds; static, ``draw`` of the lab ``scenario`` runs, which is closed afterwards."""
    def static() -> Any:
        lab = scenario()
        try:
            return draw(lab)
        finally:
            lab.close()

    return show(start, static)
