"""rmq's consumers: the push consumer, the pull consumer and what they are built from.

* :mod:`.push`: :class:`PushConsumer`, rebalanced queues pulled with long polling and fed to
  an async listener, concurrently or in queue order;
* :mod:`.consume`: the push consumer's consume services (the listener calls, concurrent or
  orderly, and the send-back of failed messages);
* :mod:`.pull`: :class:`PullConsumer`, explicit reads of chosen queues and offsets;
* :mod:`.rebalance`: which queues a push consumer owns and where each starts;
* :mod:`.allocate`: the allocation strategies (averagely, by circle, consistent hash), and
  :mod:`.allocate_rooms` those with parameters (by config, by machine room, machine-room nearby);
* :mod:`.offsetstore`: offsets on the brokers (clustering) or in a local file (broadcasting);
* :mod:`.processqueue`: the in-memory state of one owned queue.

:class:`MessageExt`, the consumed message, and pull-body decoding are
:mod:`rmq.client.messageext`'s (a request's reply and a transaction's check-back are one
too); it is exported here as well.
"""

from rmq.client.consumer.allocate import (
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueConsistentHash,
    AllocateStrategy,
    strategy_by_name,
)
from rmq.client.consumer.allocate_rooms import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    MachineRoomResolver,
)
from rmq.client.consumer.consume import ConsumeStatus, MessageListener
from rmq.client.consumer.offsetstore import (
    LocalFileOffsetStore,
    OffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from rmq.client.consumer.pull import PullConsumer, PullResult, PullStatus
from rmq.client.consumer.push import PushConsumer
from rmq.client.messageext import MessageExt
from rmq.remoting.bodies import ConsumeFromWhere, MessageModel, MessageQueue

__all__ = [
    "AllocateMachineRoomNearby",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueConsistentHash",
    "AllocateStrategy",
    "ConsumeFromWhere",
    "ConsumeStatus",
    "LocalFileOffsetStore",
    "MachineRoomResolver",
    "MessageExt",
    "MessageListener",
    "MessageModel",
    "MessageQueue",
    "OffsetStore",
    "PullConsumer",
    "PullResult",
    "PullStatus",
    "PushConsumer",
    "ReadOffsetType",
    "RemoteBrokerOffsetStore",
    "strategy_by_name",
]
