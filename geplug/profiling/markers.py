"""msproftx: ``geplug.mstx`` markers -> ``msprof_tx`` CSV and the timeline (formats.md §6.4)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from geplug.profiling.rawlog import RawLog

if TYPE_CHECKING:
    from geplug.events import MarkerEvent

__all__ = ["HEADER", "MarkerCollector"]

HEADER = ["Device_id", "pid", "tid", "category", "event_type", "payload_type", "payload_value",
          "Start_time(us)", "End_time(us)", "message_type", "message", "domain",
          "Device Start_time(us)", "Device End_time(us)"]


class MarkerCollector:
    """Appends each mark / range as one JSON line."""

    def __init__(self, log: RawLog) -> None:
        self.log = log
        self._lock = threading.Lock()

    def on_marker(self, ev: MarkerEvent) -> None:
        """Record one marker (thread-safe: markers may come from any thread)."""
        record = {"message": ev.message, "start": ev.start_us, "end": ev.end_us,
                  "domain": ev.domain, "id": ev.range_id, "pid": os.getpid(),
                  "tid": threading.get_ident() % 2**31}
        with self._lock:
            self.log.write(json.dumps(record) + "\n")

    def markers(self) -> Iterator[dict[str, Any]]:
        """Every marker recorded."""
        for line in self.log.lines():
            yield json.loads(line)

    def rows(self, device_id: int) -> Iterator[list[str]]:
        """msprof_tx CSV rows (device times ``N/A``: markers are host-side)."""
        for m in self.markers():
            is_range = m["end"] is not None
            yield [
                str(device_id), str(m["pid"]), str(m["tid"]), "0",
                "start/end" if is_range else "marker", "0", "0",
                f"{m['start']:.3f}", f"{(m['end'] if is_range else m['start']):.3f}",
                "0", m["message"], m["domain"], "N/A", "N/A",
            ]
