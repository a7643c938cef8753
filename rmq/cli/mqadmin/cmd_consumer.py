"""mqadmin commands of the consumer family (registered with rmq.cli.mqadmin.registry.subcommand)."""
