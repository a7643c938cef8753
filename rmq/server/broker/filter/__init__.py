"""SQL92 consumer filters (Apache's broker.filter)."""
