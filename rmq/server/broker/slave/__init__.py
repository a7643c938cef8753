"""A slave's copy of its master's metadata (Apache's broker.slave)."""
