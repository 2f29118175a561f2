"""kafkalab's teaching consumer: a sans-I/O core and thin adapters.

:mod:`.config` holds the settings (Kafka's names and defaults), :mod:`.fetcher` builds Fetch
requests and turns answers into records (read_committed included), :mod:`.positions` keeps each
partition's state and position, :mod:`.requests` the other request bodies, :mod:`.core` ties them
to the group member of :mod:`kafkalab.client.membership`, and :mod:`.network` runs the core over
sockets as :class:`KafkaConsumer`. The simulation runs a core with
:meth:`kafkalab.sim.cluster.SimCluster.add_consumer`.
"""

from kafkalab.client.consumer.config import ConsumerConfig, consumer_config
from kafkalab.client.consumer.core import ConsumerCore, RebalanceEvent, Request
from kafkalab.client.consumer.fetcher import ConsumerRecord

__all__ = ["ConsumerConfig", "ConsumerCore", "ConsumerRecord", "RebalanceEvent", "Request", "consumer_config"]
