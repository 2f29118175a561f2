"""Cluster metadata: the image brokers act on, as the controller publishes it (syllabus 09)."""
