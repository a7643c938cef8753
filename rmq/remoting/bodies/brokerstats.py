"""VIEW_BROKER_STATS_DATA's body: one stats item's minute, hour and day windows.

:class:`BrokerStatsData` holds three :class:`BrokerStatsItem` (``sum``, ``tps``, ``avgpt``),
written as fastjson writes Apache's beans:
``{"statsDay":{"avgpt":0.0,"sum":0,"tps":0.0},"statsHour":{...},"statsMinute":{...}}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmq.remoting.bodies.codec import Body

__all__ = ["BrokerStatsData", "BrokerStatsItem"]


@dataclass(slots=True, kw_only=True)
class BrokerStatsItem(Body):
    """What one window counted: the sum, its rate per second and the sum per time counted."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


@dataclass(slots=True, kw_only=True)
class BrokerStatsData(Body):
    """A stats item over the last minute, hour and day."""

    stats_minute: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_hour: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_day: BrokerStatsItem = field(default_factory=BrokerStatsItem)
