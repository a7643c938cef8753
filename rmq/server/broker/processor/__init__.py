"""The broker's request processors, one module per concern (Apache's broker.processor)."""
