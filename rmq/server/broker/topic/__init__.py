"""The broker's topic table (Apache's broker.topic)."""
