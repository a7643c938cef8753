"""The overview's TPS history: broker and topic TPS collected while the console runs.

`History` keeps one file per day under the state directory (`$XDG_STATE_HOME/rmq/console`,
else `~/.local/state/rmq/console`): `tps-YYYY-MM-DD.jsonl`, a JSON line per round
`{"t": ms, "brokers": {name: [in, out]}, "topics": {topic: in}}`, so a console started
again the same day draws the whole day.  Only topics with traffic are written.

`tps_round` makes one round's line from the admin API: each broker's in and out TPS from its
runtime info (`putTps` / `getTransferedTps`, the last 10 s), each user topic's put TPS of
the last minute from VIEW_BROKER_STATS_DATA (TOPIC_PUT_NUMS) summed over its masters.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from rmq.client.admin import AdminClient
from rmq.client.adminops.stats import TOPIC_PUT_NUMS, broker_stats
from rmq.common.naming import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, is_system_topic
from rmq.remoting.bodies import MASTER_ID

Point = tuple[int, float]


def state_dir() -> Path:
    """Where the console keeps its history."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "rmq" / "console"


def day_of(millis: int) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(millis / 1000))


class History:
    """The day files of TPS rounds (module docstring); safe to use from several threads."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else state_dir()
        self._lock = threading.Lock()

    def _file(self, day: str) -> Path:
        return self.directory / f"tps-{day}.jsonl"

    def append(self, line: dict[str, Any]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        text = json.dumps(line, separators=(",", ":")) + "\n"
        with self._lock, self._file(day_of(int(line["t"]))).open("a") as out:
            out.write(text)

    def rounds(self, day: str) -> list[dict[str, Any]]:
        """The rounds of `day` (YYYY-MM-DD) in the order they were written."""
        try:
            with self._lock:
                lines = self._file(day).read_text().splitlines()
        except FileNotFoundError:
            return []
        found = []
        for line in lines:
            try:
                found.append(json.loads(line))
            except ValueError:  # a line cut short by a crash
                continue
        return found

    def days(self) -> list[str]:
        """The days with a file, newest first."""
        if not self.directory.is_dir():
            return []
        names = (p.name for p in self.directory.glob("tps-*.jsonl"))
        return sorted((n[4:-6] for n in names), reverse=True)

    def broker_series(self, day: str) -> dict[str, list[Point]]:
        """`broker in` / `broker out` -> points of `day`."""
        series: dict[str, list[Point]] = {}
        for line in self.rounds(day):
            for broker, (tps_in, tps_out) in sorted(line.get("brokers", {}).items()):
                series.setdefault(f"{broker} in", []).append((line["t"], tps_in))
                series.setdefault(f"{broker} out", []).append((line["t"], tps_out))
        return series

    def topic_series(self, day: str, topic: str) -> list[Point]:
        """The topic's put TPS over `day` (0 in the rounds where it had none)."""
        return [(line["t"], line.get("topics", {}).get(topic, 0.0)) for line in self.rounds(day)]

    def busiest_topics(self, day: str, count: int = 10) -> list[tuple[str, float]]:
        """The topics with the highest peak TPS of `day`, highest first."""
        peaks: dict[str, float] = {}
        for line in self.rounds(day):
            for topic, tps in line.get("topics", {}).items():
                peaks[topic] = max(peaks.get(topic, 0.0), tps)
        return sorted(peaks.items(), key=lambda item: (-item[1], item[0]))[:count]


async def tps_round(admin: AdminClient, parallel: int = 8) -> dict[str, Any]:
    """One line of the history (module docstring), stamped now."""
    now = int(time.time() * 1000)
    statuses = await admin.cluster_list()
    brokers = {
        f"{s.broker_name}/{s.broker_id}": [round(s.in_tps or 0.0, 2), round(s.out_tps or 0.0, 2)]
        for s in statuses
        if s.error is None
    }
    info = await admin.cluster_info()
    masters = [
        addr
        for data in info.broker_addr_table.values()
        if (addr := data.broker_addrs.get(MASTER_ID))
    ]
    from rmq.client.adminops.consumer import all_topic_names

    names = [
        t
        for t in await all_topic_names(admin)
        if not is_system_topic(t)
        and not t.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))
    ]
    gate = asyncio.Semaphore(parallel)
    topics: dict[str, float] = {}

    async def one(topic: str, addr: str) -> None:
        async with gate:
            try:
                data = await broker_stats(admin, addr, TOPIC_PUT_NUMS, topic)
            except Exception:  # not counted on this broker: no traffic
                return
        if data.stats_minute.tps > 0:
            topics[topic] = round(topics.get(topic, 0.0) + data.stats_minute.tps, 2)

    await asyncio.gather(*(one(topic, addr) for topic in names for addr in masters))
    return {"t": now, "brokers": brokers, "topics": dict(sorted(topics.items()))}
