"""kafkalab: a compact, real Kafka broker for learning how Kafka works inside.

The package is the master copy of everything the book shows. ``import kafkalab`` stays light:
Jupyter, widgets, matplotlib and Spark are imported only by the modules that present or analyse
(``kafkalab.viz``, ``kafkalab.spark``).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
