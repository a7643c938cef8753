"""Master/slave replication over Apache 4.9's HA protocol (the broker side; the store has no
sockets).

* :mod:`.frames`: the two frames of the protocol and the offset rules.
* :mod:`.service`: :class:`~.service.HAService`, one per broker: the HA listener, the master's
  connections (:mod:`.connection`), the slave's client (:mod:`.client`), the highest offset a
  slave acknowledged and the SYNC_MASTER waiters.
"""
