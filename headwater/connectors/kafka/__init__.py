"""The ``kafka`` source: topics read in offset ranges, offsets as state (see ``_source``)."""

from headwater.connectors.kafka._source import KafkaSource, KafkaStream

__all__ = ["KafkaSource", "KafkaStream"]
