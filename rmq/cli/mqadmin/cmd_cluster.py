"""mqadmin commands of the cluster family (registered with rmq.cli.mqadmin.registry.subcommand)."""
