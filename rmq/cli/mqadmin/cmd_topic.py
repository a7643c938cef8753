"""mqadmin commands of the topic family (registered with rmq.cli.mqadmin.registry.subcommand)."""
