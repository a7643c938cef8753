"""Admin operations behind the mqadmin commands, one module per family, none of them printing:
`async def op(admin: AdminClient, ...) -> <dataclass>` (cluster, topic, consumer, message)."""
