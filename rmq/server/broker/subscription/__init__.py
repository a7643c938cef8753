"""The broker's consumer-group settings (Apache's broker.subscription)."""
