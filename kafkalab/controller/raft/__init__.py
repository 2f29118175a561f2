"""KRaft: the controllers' Raft quorum over the ``__cluster_metadata`` log (KIP-595).

:mod:`~kafkalab.controller.raft.state` holds the epoch states and their transition table,
:mod:`~kafkalab.controller.raft.quorum_state_file` the ``quorum-state`` file,
:mod:`~kafkalab.controller.raft.metadata_log` the log seam, :mod:`~kafkalab.controller.raft.node`
the sans-I/O voter, and :mod:`~kafkalab.controller.raft.leader` the leader's commit rule.
"""
