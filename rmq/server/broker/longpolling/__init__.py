"""Pull requests parked until a message arrives (Apache's broker.longpolling)."""
