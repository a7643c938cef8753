"""The console layer: clients of a cluster that show it to people and to Prometheus.

`rmq exporter` (and later `rmq console`) live here, above rmq/client: they read the cluster
only through the admin API of `rmq.client` and never import the broker, the name server or
the store (an import-linter contract in pyproject.toml holds them to it).
"""
