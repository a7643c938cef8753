"""`rmq consume --sql EXPR`: choosing the subscription's expression type, and checking it.

`--filter` is a tag expression, as in Apache's tools (`TagA || TagB`); `--sql` is an SQL92
expression on the message properties (`a > 14 AND region = 'eu'`).  They exclude each other
(a usage error, exit 2).  A `--filter` whose text has a comparison operator or a quote is
still taken as tags (it would match no message), with a warning that points at `--sql`.
An `--sql` expression that does not parse is a usage error naming the column.

Before reading, the brokers of the topic are asked with CHECK_CLIENT_CONFIG whether they
accept the subscription, as Apache's push consumer does at start: a broker whose
`enablePropertyFilter` is off refuses it, and the command fails with the broker's reason
(exit 1) instead of reading nothing.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

import click

from rmq.cli.errors import PROG_NAME

if TYPE_CHECKING:
    from rmq.client.instance import ClientInstance

_LOOKS_LIKE_SQL = re.compile(r"[=<>'\"]")


def subscription_expression(tag_filter: str | None, sql: str | None) -> tuple[str, str]:
    """(expression, expression type) of the `--filter` / `--sql` options (module docstring)."""
    from rmq.remoting.bodies import EXPRESSION_TYPE_SQL92, EXPRESSION_TYPE_TAG

    if tag_filter is not None and sql is not None:
        raise click.UsageError("--filter and --sql exclude each other")
    if sql is not None:
        from rmq.common.sqlfilter import SqlSyntaxError, compile_selector

        try:
            compile_selector(sql)
        except SqlSyntaxError as exc:
            raise click.BadParameter(str(exc), param_hint="'--sql'") from None
        return sql, EXPRESSION_TYPE_SQL92
    if tag_filter is not None and _LOOKS_LIKE_SQL.search(tag_filter):
        sys.stderr.write(
            f"{PROG_NAME}: warning: --filter takes a tag expression ('TagA || TagB'); "
            f"{tag_filter!r} looks like SQL92: to filter by properties use --sql\n"
        )
    return tag_filter or "*", EXPRESSION_TYPE_TAG


async def check_with_brokers(
    instance: ClientInstance, group: str, topic: str, expression: str, expression_type: str
) -> None:
    """CHECK_CLIENT_CONFIG of an SQL92 subscription at the topic's brokers (MQBrokerError
    when one refuses it); nothing to check for tags."""
    from rmq.client.consumer.filtercheck import check_subscriptions
    from rmq.remoting.bodies import EXPRESSION_TYPE_TAG, SubscriptionData

    if expression_type == EXPRESSION_TYPE_TAG:
        return
    subscription = SubscriptionData.from_expression(topic, expression, expression_type)
    await check_subscriptions(instance, group, [subscription])
