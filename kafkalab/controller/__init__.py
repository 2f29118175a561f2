"""The controller: partition leadership and ISR changes, the metadata log, the KRaft quorum (syllabus 09)."""
