"""DLedger: a broker group that elects its leader and replicates its commitlog (the broker
side; the log's files are in ``rmq.store.dledger``).

* :mod:`.protocol`: request and response codes and the fastjson bodies of the RPC.
* :mod:`.config`: a node's group, id, peers and DLedger 0.3.1.2's fixed timings.
* :mod:`.member`: the node's role, term and vote, persisted in ``currterm``.
* :mod:`.elector`: votes and heartbeats.
* :mod:`.pusher`: the leader's replication to each follower, the quorum commit, and the
  follower's handling of pushes.
* :mod:`.node`: one node: its RPC server on the address ``dLegerPeers`` gives it, its client,
  and appends that wait for a quorum.
* :mod:`.commitlog`: RocketMQ sends through a node (put statuses as Apache's DLedgerCommitLog
  maps them) and dispatch of committed records; not yet used by the broker.
"""
