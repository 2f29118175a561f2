"""Replication: partitions as leaders and followers, the ISR, the high watermark (syllabus 08)."""
