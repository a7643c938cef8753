"""SQL92 consumer filters on the broker: the registry (``consumerFilter.json``) and the pull's
filters, after Apache's ``ConsumerFilterManager`` and ``ExpressionMessageFilter``.

:class:`ConsumerFilterManager` keeps, per topic and consumer group, the compiled SQL92
expression of every non-TAG subscription the group's heartbeats carried, with its version
(the subscription's ``subVersion``), birth and death times and bloom filter data:

* :meth:`~ConsumerFilterManager.register_group` runs on every heartbeat: each non-TAG
  subscription is registered (a newer version replaces the filter when the expression or
  its type changed, an equal or older one is ignored but revives a dead filter of the same
  version; an expression that no longer compiles removes the filter), and the group's filters
  on topics it no longer subscribes to are marked dead.
  :meth:`~ConsumerFilterManager.unregister` marks a group's filters dead when its last
  consumer leaves.  Dead filters are dropped when persisted after ``filterDataCleanTimeSpan``
  (24 h).  Filters are kept whatever ``enablePropertyFilter`` says, as in Apache.
* The file is written every 10 s and at shutdown.  Loaded filters are recompiled and all
  taken as dead since 30 s ago (their consumers re-register); when the bloom filter's
  parameters changed the file is ignored.

:func:`pull_filters` gives the store read its two tests: TAG subscriptions filter by the
consume queue's tags code; SQL92 ones let every consume-queue entry through (rmq writes no
consume-queue extension bit map: see docs/decisions.md) and evaluate the expression on the
message's properties, delivering only what evaluates to true.  It also answers the pull's
filter errors (FILTER_DATA_NOT_EXIST, FILTER_DATA_NOT_LATEST, and SYSTEM_ERROR while
``enablePropertyFilter`` is off).  :func:`check_client_config` answers CHECK_CLIENT_CONFIG.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rmq.common.bloomfilter import BloomFilter
from rmq.common.config import BrokerConfig
from rmq.common.properties import decode_properties_bytes
from rmq.common.recordwalk import frame_at
from rmq.common.sqlfilter import Selector, SqlSyntaxError, compile_selector
from rmq.remoting.bodies import (
    EXPRESSION_TYPE_SQL92,
    EXPRESSION_TYPE_TAG,
    SUB_ALL,
    SubscriptionData,
)
from rmq.remoting.bodies.filterdata import (
    BloomFilterData,
    ConsumerFilterData,
    ConsumerFilterWrapper,
    FilterDataMapByTopic,
)
from rmq.remoting.codes import ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.server.broker.configmanager import ConfigManager
from rmq.store.store import RecordFilter, TagsFilter

log = logging.getLogger("rmq.broker")

LOADED_DEAD_AGO_MS = 30_000
"""Loaded filters count as dead since this long before the load."""


def is_tag_type(expression_type: str | None) -> bool:
    """Apache's ``ExpressionType.isTagType``: no type or TAG."""
    return expression_type is None or expression_type == EXPRESSION_TYPE_TAG


def compile_expression(expression_type: str | None, expression: str | None) -> Selector:
    """The compiled filter of a non-TAG subscription; SqlSyntaxError when it does not compile
    (an unknown expression type included)."""
    if expression_type != EXPRESSION_TYPE_SQL92:
        raise SqlSyntaxError(0, f"no filter for expression type {expression_type}")
    if expression is None:
        raise SqlSyntaxError(0, "no expression")
    return compile_selector(expression)


@dataclass(slots=True, eq=False)
class ConsumerFilter:
    """One group's filter on one topic: the persisted data and its compiled selector (None
    when a loaded expression no longer compiles)."""

    data: ConsumerFilterData
    selector: Selector | None

    @property
    def dead(self) -> bool:
        return self.data.dead_time >= self.data.born_time


class ConsumerFilterManager(ConfigManager[ConsumerFilterWrapper]):
    """The SQL92 consumer filters of one broker (see the module docstring)."""

    content = "consumer filters"

    def __init__(
        self, path: str | os.PathLike[str], broker_config: BrokerConfig, clock: Callable[[], int]
    ) -> None:
        super().__init__(path, ConsumerFilterWrapper, self.filter_wrapper)
        self._broker_config = broker_config
        self._clock = clock
        self.bloom_filter = BloomFilter(
            broker_config.max_error_rate_of_bloom_filter,
            broker_config.expect_consumer_num_use_filter,
        )
        self._by_topic: dict[str, dict[str, ConsumerFilter]] = {}

    # -- persistence ---------------------------------------------------------------------

    def _bloom_valid(self, data: BloomFilterData | None) -> bool:
        bloom = self.bloom_filter
        return (
            data is not None
            and data.bit_num == bloom.bits
            and len(data.bit_pos) == bloom.hash_count
        )

    def _apply(self, body: ConsumerFilterWrapper) -> int:
        loaded: dict[str, dict[str, ConsumerFilter]] = {}
        dead_since = self._clock() - LOADED_DEAD_AGO_MS
        for topic, by_group in body.filter_data_by_topic.items():
            groups = loaded.setdefault(topic, {})
            for group, data in by_group.group_filter_data.items():
                if not self._bloom_valid(data.bloom_filter_data):
                    log.info("the bloom filter changed: the persisted consumer filters are ignored")
                    return 0
                try:
                    selector: Selector | None = compile_expression(
                        data.expression_type, data.expression
                    )
                except SqlSyntaxError as exc:
                    log.error(
                        "loaded consumer filter %s of %s does not compile: %s", group, topic, exc
                    )
                    selector = None
                if data.dead_time == 0:
                    data.dead_time = max(dead_since, data.born_time)
                groups[group] = ConsumerFilter(data, selector)
        self._by_topic = loaded
        return sum(map(len, loaded.values()))

    def filter_wrapper(self) -> ConsumerFilterWrapper:
        """The file's content, after dropping filters dead for too long (as Apache's encode)."""
        self.clean()
        return ConsumerFilterWrapper(
            filter_data_by_topic={
                topic: FilterDataMapByTopic(
                    topic=topic,
                    group_filter_data={
                        group: self._with_dead_flag(one) for group, one in groups.items()
                    },
                )
                for topic, groups in self._by_topic.items()
            }
        )

    @staticmethod
    def _with_dead_flag(one: ConsumerFilter) -> ConsumerFilterData:
        one.data.dead = one.dead
        return one.data

    def clean(self) -> None:
        """Drop filters dead for ``filterDataCleanTimeSpan`` and topics left without any."""
        now = self._clock()
        span = self._broker_config.filter_data_clean_time_span
        for topic, groups in list(self._by_topic.items()):
            for group, one in list(groups.items()):
                if one.dead and now - one.data.dead_time >= span:
                    log.info("consumer filter of %s on %s dead too long, removed", group, topic)
                    del groups[group]
            if not groups:
                del self._by_topic[topic]

    # -- registration --------------------------------------------------------------------

    def get(self, topic: str, group: str) -> ConsumerFilter | None:
        return self._by_topic.get(topic, {}).get(group)

    def register_group(self, group: str, subscriptions: Iterable[SubscriptionData]) -> None:
        """A heartbeat of ``group`` with these subscriptions (module docstring)."""
        subscriptions = list(subscriptions)
        for subscription in subscriptions:
            self.register(
                subscription.topic,
                group,
                subscription.sub_string,
                subscription.expression_type,
                subscription.sub_version,
            )
        topics = {subscription.topic for subscription in subscriptions}
        now = self._clock()
        for topic, groups in self._by_topic.items():
            one = groups.get(group)
            if one is not None and topic not in topics and not one.dead:
                one.data.dead_time = now
                log.info("consumer filter of %s on %s: no longer subscribed, dead", group, topic)

    def build(
        self, topic: str, group: str, expression: str, expression_type: str, version: int
    ) -> ConsumerFilter | None:
        try:
            selector = compile_expression(expression_type, expression)
        except SqlSyntaxError as exc:
            log.error("consumer filter of %s on %s does not compile: %s", group, topic, exc)
            return None
        data = ConsumerFilterData(
            consumer_group=group,
            topic=topic,
            expression=expression,
            expression_type=expression_type,
            born_time=self._clock(),
            bloom_filter_data=BloomFilterData(
                bit_pos=self.bloom_filter.bit_positions(f"{group}#{topic}"),
                bit_num=self.bloom_filter.bits,
            ),
            client_version=version,
        )
        return ConsumerFilter(data, selector)

    def register(
        self,
        topic: str,
        group: str,
        expression: str | None,
        expression_type: str | None,
        version: int,
    ) -> bool:
        """Register one subscription's filter; True when the group's filter is now current."""
        if is_tag_type(expression_type) or not expression:
            return False
        assert expression_type is not None
        groups = self._by_topic.setdefault(topic, {})
        old = groups.get(group)
        if old is not None and version <= old.data.client_version:
            if version == old.data.client_version and old.dead:
                old.data.dead_time = 0
                return True
            return False
        if (
            old is not None
            and old.data.expression == expression
            and old.data.expression_type == expression_type
            and old.data.bloom_filter_data is not None
        ):
            old.data.client_version = version
            old.data.dead_time = 0 if old.dead else old.data.dead_time
            return True
        built = self.build(topic, group, expression, expression_type, version)
        if built is None:
            groups.pop(group, None)
            return False
        groups[group] = built
        log.info("consumer filter of %s on %s registered: %s", group, topic, expression)
        return True

    def unregister(self, group: str) -> None:
        """The group's last consumer left: its live filters die now."""
        now = self._clock()
        for groups in self._by_topic.values():
            one = groups.get(group)
            if one is not None and not one.dead:
                one.data.dead_time = now


# -- the pull's filters -------------------------------------------------------------------


def _sql_record_filter(selector: Selector) -> RecordFilter:
    def matches(record: memoryview) -> bool:
        _, _, _, _, props_pos, end = frame_at(record, 0, len(record))
        return selector.matches(decode_properties_bytes(record[props_pos:end]))

    return matches


PullFilters = tuple[TagsFilter | None, RecordFilter | None]


def pull_filters(
    manager: ConsumerFilterManager,
    broker_config: BrokerConfig,
    subscription: SubscriptionData,
    *,
    group: str,
    from_request: bool,
    request_version: int,
) -> PullFilters | RemotingCommand:
    """The (consume queue, record) tests of a pull with ``subscription``, or the error
    response.  ``from_request``: the pull carried its subscription (FLAG_SUBSCRIPTION) rather
    than relying on the group's heartbeats."""
    if subscription.class_filter_mode:
        return None, None
    expression_type = subscription.expression_type
    if is_tag_type(expression_type):
        if subscription.sub_string == SUB_ALL:
            return None, None
        return frozenset(subscription.code_set).__contains__, None
    one: ConsumerFilter | None
    if from_request:
        # Apache builds a throw-away filter; one that does not compile filters nothing.
        one = manager.build(
            subscription.topic, group, subscription.sub_string, expression_type, request_version
        )
    else:
        one = manager.get(subscription.topic, group)
        if one is None:
            return create_response(
                ResponseCode.FILTER_DATA_NOT_EXIST,
                "The broker's consumer filter data is not exist!Your expression may be wrong!",
            )
        if one.data.client_version < request_version:
            log.warning(
                "the consumer filter of %s on %s is not the latest: %d < %d",
                group,
                subscription.topic,
                one.data.client_version,
                request_version,
            )
            return create_response(
                ResponseCode.FILTER_DATA_NOT_LATEST,
                "the consumer's consumer filter data not latest",
            )
    if not broker_config.enable_property_filter:
        return unsupported_filter_response(expression_type)
    if one is None or one.selector is None:
        return None, None
    return None, _sql_record_filter(one.selector)


def unsupported_filter_response(expression_type: str | None) -> RemotingCommand:
    """SYSTEM_ERROR of a non-TAG subscription while ``enablePropertyFilter`` is off."""
    return create_response(
        ResponseCode.SYSTEM_ERROR,
        f"The broker does not support consumer to filter message by {expression_type}",
    )


def check_client_config(
    broker_config: BrokerConfig, subscription: SubscriptionData | None
) -> RemotingCommand:
    """CHECK_CLIENT_CONFIG: a TAG subscription is fine; another needs ``enablePropertyFilter``
    and an expression that compiles (SUBSCRIPTION_PARSE_FAILED with the reason otherwise)."""
    if subscription is None or is_tag_type(subscription.expression_type):
        return create_response(ResponseCode.SUCCESS)
    if not broker_config.enable_property_filter:
        return unsupported_filter_response(subscription.expression_type)
    try:
        compile_expression(subscription.expression_type, subscription.sub_string)
    except SqlSyntaxError as exc:
        log.warning("client filter %r does not compile: %s", subscription.sub_string, exc)
        return create_response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc))
    return create_response(ResponseCode.SUCCESS)
