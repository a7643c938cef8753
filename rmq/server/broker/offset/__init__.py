"""Committed consumer offsets (Apache's broker.offset)."""
