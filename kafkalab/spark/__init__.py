"""kafkalab's Spark integration: the ``kafkalog`` data source over Kafka segment directories.

``import kafkalab`` never imports this package; importing it does not start Spark either.
``kafkalab.spark.session()`` starts a local, offline SparkSession with the source registered::

    spark = kafkalab.spark.session()
    records = spark.read.format("kafkalog").load("/data/kafka-logs/orders")
    batches = spark.read.format("kafkalog").option("level", "batches").load("/data/kafka-logs")
"""

from __future__ import annotations

from kafkalab.spark.session import register, session

__all__ = ["register", "session"]
