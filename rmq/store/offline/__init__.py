"""Offline, read-only reading of a store directory (ours or Apache RocketMQ's), in small
rooms; :class:`~rmq.store.offline.reader.StoreReader` is the way in.

* ``problems``: what validation and scans report (kinds, the report callback, the capped log);
* ``files``: files mapped read-only, file-level checks, the lock probe;
* ``scan``: the mapped commitlog and the one walk every scan goes through (``RecordFrame``);
* ``queues``: consume queue files: binary searches over entries, a queue's entries in order;
* ``reader``: ``StoreReader``: listings, records, lookups by offset, id and key, checkpoint,
  config files;
* ``validate``: the one-pass check of a whole store;
* ``summary``: what is in a store and in what state (overview, queue ranges and gaps,
  checkpoint);
* ``search``: scans that filter records and count them per queue.

Nothing here writes, locks or repairs; display (columns, rows, times) is the command
line's (:mod:`rmq.cli.inspect`).
"""
