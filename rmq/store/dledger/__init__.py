"""The DLedger commitlog's files: entries, their index, the checkpoint and term files, and the
RocketMQ record inside each entry (files only; the replication protocol lives in the broker)."""
