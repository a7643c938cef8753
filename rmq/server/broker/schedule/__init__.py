"""Delayed messages (Apache's broker.schedule)."""
