"""The Apache Kafka destination: each stream a topic, exactly once for read_committed
consumers (docs/destinations/kafka.md)."""

from headwater.destinations.kafka._destination import KafkaDestination

__all__ = ["KafkaDestination"]
