"""mqadmin commands of the message family (registered with rmq.cli.mqadmin.registry.subcommand)."""
