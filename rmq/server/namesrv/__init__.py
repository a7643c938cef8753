"""The name server: route table, KV config, broker expiry."""
