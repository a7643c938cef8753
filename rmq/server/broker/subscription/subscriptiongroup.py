"""The broker's consumer-group settings (``config/subscriptionGroup.json``).

:class:`SubscriptionGroupManager` owns the table group name -> SubscriptionGroupConfig
(consume enabled, retry queue count, max retries, which broker to pull from, whether to
notify consumers of membership changes), its :class:`DataVersion` and the file.  Design:

* The table starts with the system groups of spec §4.8, all with the default settings:
  ``TOOLS_CONSUMER``, ``FILTERSRV_CONSUMER``, ``SELF_TEST_C_GROUP``, ``CID_ONS-HTTP-PROXY``,
  ``CID_ONSAPI_PULL``, ``CID_ONSAPI_PERMISSION`` and ``CID_ONSAPI_OWNER``.  :meth:`load` reads
  the file over them (stored entries win) and takes its DataVersion.
* :meth:`find` with ``auto_create`` is what heartbeats, pulls and sends-back use: an unknown
  group is created with the defaults when the broker's ``autoCreateSubscriptionGroup`` is on,
  or always for a system consumer group (``CID_RMQ_SYS_*``).  Without ``auto_create`` it is a
  plain lookup, for admin requests.
* Every change bumps the DataVersion and schedules a rewrite of the file
  (:class:`~rmq.server.broker.configmanager.VersionedConfigManager`: group commit,
  atomically, the previous content kept as ``.bak``; the request that made the change is
  answered once it is written); a failed write is logged and the change stays in memory.

The table is used from the broker's event loop only, so there are no locks.  Stored configs
are treated as values: an update puts the new object in the table.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from rmq.common.config import BrokerConfig
from rmq.common.naming import (
    CID_ONSAPI_OWNER_GROUP,
    CID_ONSAPI_PERMISSION_GROUP,
    CID_ONSAPI_PULL_GROUP,
    FILTERSRV_CONSUMER_GROUP,
    ONS_HTTP_PROXY_GROUP,
    SELF_TEST_CONSUMER_GROUP,
    TOOLS_CONSUMER_GROUP,
    is_sys_consumer_group,
)
from rmq.remoting.bodies import SubscriptionGroupConfig, SubscriptionGroupWrapper
from rmq.server.broker.configmanager import VersionedConfigManager

log = logging.getLogger("rmq.broker")

PREDEFINED_GROUPS = (
    TOOLS_CONSUMER_GROUP,
    FILTERSRV_CONSUMER_GROUP,
    SELF_TEST_CONSUMER_GROUP,
    ONS_HTTP_PROXY_GROUP,
    CID_ONSAPI_PULL_GROUP,
    CID_ONSAPI_PERMISSION_GROUP,
    CID_ONSAPI_OWNER_GROUP,
)
"""Groups every broker knows from the start, with the default settings."""


class SubscriptionGroupManager(VersionedConfigManager[SubscriptionGroupWrapper]):
    """The subscription-group table of one broker, persisted to ``subscriptionGroup.json``."""

    content = "subscription groups"
    table_key = "subscriptionGroupTable"

    def __init__(self, broker_config: BrokerConfig, path: str | os.PathLike[str]) -> None:
        super().__init__(path, SubscriptionGroupWrapper, self.subscription_group_wrapper)
        self._broker_config = broker_config
        self._table = {
            group: SubscriptionGroupConfig(group_name=group) for group in PREDEFINED_GROUPS
        }

    # -- persistence ---------------------------------------------------------------------

    def _apply(self, body: SubscriptionGroupWrapper) -> int:
        """The stored groups replace the predefined ones of the same name."""
        self._table.update(body.subscription_group_table)
        self._data_version = body.data_version
        return len(body.subscription_group_table)

    def _clear(self) -> None:
        self._table.clear()

    def _entries(self) -> Mapping[str, SubscriptionGroupConfig]:
        return self._table

    # -- lookups -------------------------------------------------------------------------

    @property
    def subscription_group_table(self) -> Mapping[str, SubscriptionGroupConfig]:
        """Every group (a read-only view of the live table)."""
        return self._table

    def subscription_group_wrapper(self) -> SubscriptionGroupWrapper:
        """A snapshot of the table and its version (GET_ALL_SUBSCRIPTIONGROUP_CONFIG)."""
        return SubscriptionGroupWrapper(
            subscription_group_table=dict(self._table), data_version=self._data_version
        )

    def find(self, group: str, *, auto_create: bool) -> SubscriptionGroupConfig | None:
        """The settings of ``group``; None when unknown and not auto-created.

        With ``auto_create``, an unknown group gets the default settings (and is persisted)
        when ``autoCreateSubscriptionGroup`` is on or the group is a system consumer group.
        """
        config = self._table.get(group)
        if config is not None or not auto_create:
            return config
        if not (self._broker_config.auto_create_subscription_group or is_sys_consumer_group(group)):
            return None
        config = SubscriptionGroupConfig(group_name=group)
        self._table[group] = config
        log.info("auto create a subscription group %s", config)
        self.next_data_version()
        return config

    # -- changes -------------------------------------------------------------------------

    def update(self, config: SubscriptionGroupConfig) -> None:
        """Create or replace a group's settings (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)."""
        old = self._table.get(config.group_name)
        self._table[config.group_name] = config
        if old is None:
            log.info("create new subscription group %s", config)
        else:
            log.info("update subscription group config, old: %s new: %s", old, config)
        self.next_data_version()

    def delete(self, group: str) -> bool:
        """Remove a group's settings (DELETE_SUBSCRIPTIONGROUP); False when it did not exist."""
        return self._delete(self._table, group, "subscription group")
