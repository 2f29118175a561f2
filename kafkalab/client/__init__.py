"""kafkalab's client side: a small blocking network client and a server launcher.

:mod:`kafkalab.client.launcher` starts ``kafkalab server-start`` as a child process and learns
its port; :mod:`kafkalab.client.connection` speaks the Kafka protocol to a broker over one
blocking socket (bootstrap, ApiVersions negotiation, Metadata) and is what the CLI tools use.
:mod:`kafkalab.client.producer` is the teaching producer: a sans-I/O core (accumulator, sender,
partitioner) with a socket adapter; :mod:`kafkalab.sim.producer` runs the same core in the
simulation.
"""
