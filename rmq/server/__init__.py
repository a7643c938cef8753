"""The long-running processes: name server, broker, standalone."""
