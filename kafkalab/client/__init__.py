"""kafkalab's client side: a teaching consumer, group membership, a blocking client, a launcher.

:mod:`kafkalab.client.launcher` starts ``kafkalab server-start`` as a child process and learns
its port; :mod:`kafkalab.client.connection` speaks the Kafka protocol to a broker over one
blocking socket (bootstrap, ApiVersions negotiation, Metadata) and is what the CLI tools use.
:mod:`kafkalab.client.producer` is the teaching producer: a sans-I/O core (accumulator, sender,
partitioner) with a socket adapter; :mod:`kafkalab.sim.producer` runs the same core in the
simulation. :mod:`kafkalab.client.consumer` is a whole consumer learners can read: a sans-I/O
core (fetcher with Kafka's fetch settings and read_committed, positions and
``auto.offset.reset``, commits, rebalance listener events) that runs over sockets as
``KafkaConsumer`` and in the simulation; it joins groups through
:mod:`kafkalab.client.membership` and the assignors of :mod:`kafkalab.client.assignors`.
"""
