"""The message store: commitlog, consume queues, index, checkpoint. Files only."""
