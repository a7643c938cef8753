"""What a producer and a consumer share: a group that works through a client instance.

`ClientMember` is the frame of `Producer`, `PushConsumer` and `PullConsumer`.  It takes the
`ClientInstance` it is given (shared: its owner starts and shuts it down) or creates one on
the name server addresses (owned: `start` starts it before the member joins, `shutdown`
shuts it down after the member leaves); it checks the group name as Java words it, refuses a
second start and makes the member an async context manager.  A subclass says what joining
and leaving mean (`_join`, `_leave`): registering its group with the instance, background
tasks, committing offsets.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Self

from rmq.client.errors import MQClientError
from rmq.client.instance import ClientInstance
from rmq.common.naming import group_error


def check_group(group: str, role: str, reserved: str | None = None) -> None:
    """MQClientError, worded as Java words it, when `group` is not a valid group name or is
    `reserved`, the default group of the `role` ("producer", "consumer")."""
    error = group_error(group)
    if error is not None:
        raise MQClientError(-1, error)
    if group == reserved:
        raise MQClientError(
            -1, f"{role}Group can not equal {reserved}, please specify another one."
        )


class ClientMember(ABC):
    """A producer or consumer (`role`) of `group`, working through `instance`."""

    role: ClassVar[str]
    reserved_group: ClassVar[str | None] = None  # the role's default group, refused

    def __init__(
        self,
        group: str,
        namesrv_addrs: str | None,
        instance: ClientInstance | None,
        instance_name: str | None,
    ) -> None:
        if instance is not None:
            self.instance, self._owns_instance = instance, False
        elif namesrv_addrs is None:
            raise ValueError(f"a {self.role} needs name server addresses or a client instance")
        else:
            self.instance, self._owns_instance = ClientInstance(namesrv_addrs, instance_name), True
        self.group = group
        self._running = False

    async def start(self) -> None:
        """Check the configuration, start an owned instance, then join it."""
        if self._running:
            raise MQClientError(-1, f"The {self.role} {self.group} is already started")
        self._check_config()
        if self._owns_instance:
            await self.instance.start()
        self._running = True
        await self._join()

    async def shutdown(self) -> None:
        """Leave the instance, then shut it down if it is owned."""
        if not self._running:
            return
        self._running = False
        await self._leave()
        if self._owns_instance:
            await self.instance.shutdown()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    def _check_config(self) -> None:
        """MQClientError when the member cannot start as configured."""
        check_group(self.group, self.role, self.reserved_group)

    @abstractmethod
    async def _join(self) -> None:
        """Register with the started instance and start what runs in the background."""

    @abstractmethod
    async def _leave(self) -> None:
        """Stop what runs in the background and unregister from the instance."""
