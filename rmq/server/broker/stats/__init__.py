"""Broker statistics and stats items (Apache's broker.stats)."""
