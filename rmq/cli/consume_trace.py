"""`rmq consume --trace`: the printer that traces what it prints (see tracing.py).

Every batch handed to the printer, by the queue readers or by the group's push consumer, is
one consumed batch: a SubBefore record per message before it is printed, a SubAfter record
per message after (success when the whole batch was printed), under the group of `-g` or,
without it, the tools' group TOOLS_CONSUMER that reads the queues.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, BinaryIO

from rmq.cli.consume import Printer
from rmq.cli.consume_format import Render
from rmq.cli.tracing import start_dispatcher
from rmq.common.trace import ConsumeReturnType

if TYPE_CHECKING:
    from rmq.client.messageext import MessageExt
    from rmq.client.trace import ConsumeTraceHook, TraceDispatcher


class TracedPrinter(Printer):
    """A printer whose every write is traced as one consumed batch."""

    def __init__(
        self, out: BinaryIO, render: Render, limit: int | None, hook: ConsumeTraceHook
    ) -> None:
        super().__init__(out, render, limit)
        self.hook = hook

    def write(self, messages: Sequence[MessageExt]) -> int:
        if not messages or self.stopped.is_set():
            return super().write(messages)
        before = self.hook.before(messages)
        printed = super().write(messages)
        done = ConsumeReturnType.SUCCESS if printed == len(messages) else ConsumeReturnType.FAILED
        self.hook.after(before, len(messages), done)
        return printed


async def traced_printer(
    namesrv_addrs: str,
    group: str | None,
    topic: str | None,
    printer_args: tuple[BinaryIO, Render, int | None],
) -> tuple[Printer, TraceDispatcher | None]:
    """The printer of `rmq consume`, traced to `topic` unless it is None, and the trace
    dispatcher to shut down at the end."""
    from rmq.client.trace import ConsumeTraceHook
    from rmq.common.naming import TOOLS_CONSUMER_GROUP

    consumer_group = group or TOOLS_CONSUMER_GROUP
    dispatcher = await start_dispatcher(namesrv_addrs, consumer_group, "CONSUME", topic)
    if dispatcher is None:
        return Printer(*printer_args), None
    return TracedPrinter(*printer_args, ConsumeTraceHook(dispatcher, consumer_group)), dispatcher
