"""The deterministic simulation: clock, network, faults (syllabus 08-09)."""
