"""Command-line tools that mirror Kafka's scripts (``kafka-dump-log.sh`` -> ``kafkalab dump-log``)."""
