"""The asyncio network adapter: Kafka clients talk to kafkalab's broker over TCP."""

from kafkalab.server.server import KafkaServer, is_loopback

__all__ = ["KafkaServer", "is_loopback"]
