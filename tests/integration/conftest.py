"""Fixtures of the integration modules: the `rmq mqadmin` cluster (mqadmin_cluster.py)."""

from tests.integration.mqadmin_cluster import mqadmin_cluster

__all__ = ["mqadmin_cluster"]
