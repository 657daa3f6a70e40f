"""host_sys / host_sys_usage: real samples of this process and this machine with psutil.

A background thread samples at ``host_sys_usage_freq`` on a fixed schedule (no drift):
``host_sys`` cpu / mem / disk are this process, network is system-wide; ``host_sys_usage``
cpu / mem are the whole system (options.md §3.3). What the machine does not allow (psutil
missing, per-process I/O counters denied, ``osrt`` which needs ``perf`` and ``ltrace``) is not
faked: it is listed in ``host/collection_notice.txt`` and in a warning.
"""

from __future__ import annotations

import json
import os
import threading
import time
import warnings
from typing import Any

from geplug.errors import GeplugWarning
from geplug.profiling.layout import write_text
from geplug.profiling.rawlog import RawLog

__all__ = ["ITEMS", "JOIN_TIMEOUT_S", "HostSampler", "HostSamplingWarning"]

JOIN_TIMEOUT_S = 5.0
"""How long :meth:`HostSampler.stop` waits for the thread (a module attribute for tests)."""

ITEMS: dict[str, tuple[str, list[str], list[str]]] = {
    "cpu": ("host_cpu_usage", ["Timestamp(us)", "Process CPU(%)"], ["proc_cpu"]),
    "mem": ("host_mem_usage", ["Timestamp(us)", "Process RSS(MB)", "Process VMS(MB)"],
            ["proc_rss", "proc_vms"]),
    "disk": ("host_disk_usage", ["Timestamp(us)", "Read(KB/s)", "Write(KB/s)"],
             ["disk_read", "disk_write"]),
    "network": ("host_network_usage", ["Timestamp(us)", "Rx(KB/s)", "Tx(KB/s)"],
                ["net_rx", "net_tx"]),
    "usage_cpu": ("cpu_usage", ["Timestamp(us)", "Total CPU(%)"], ["sys_cpu"]),
    "usage_mem": ("sys_mem", ["Timestamp(us)", "Total(MB)", "Used(MB)", "Usage(%)"],
                  ["sys_total", "sys_used", "sys_pct"]),
}
"""Collected item -> (CSV stem, columns, sample keys)."""


class HostSamplingWarning(GeplugWarning):
    """Some host items cannot be collected on this machine."""


class HostSampler:
    """Samples the requested items on a background thread until :meth:`stop`."""

    def __init__(self, host_sys: tuple[str, ...], host_sys_usage: tuple[str, ...], freq: int,
                 log: RawLog) -> None:
        self.freq = max(1, freq)
        self.log = log
        self.items: list[str] = [i for i in host_sys if i in ITEMS]
        self.items += [f"usage_{i}" for i in host_sys_usage if f"usage_{i}" in ITEMS]
        self.requested = bool(host_sys or host_sys_usage)
        """Whether host_sys or host_sys_usage asked for anything (the notice says so)."""
        self._lock = threading.Lock()
        """Guards :attr:`notices` and :attr:`samples` (the thread and the caller share them)."""
        self._notices: list[str] = []
        if "osrt" in host_sys:
            self._notice("host_sys osrt: not collected (needs perf and ltrace, which geplug "
                         "does not run)")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._psutil: Any = None
        self._samples = 0

    def _notice(self, text: str) -> None:
        with self._lock:
            self._notices.append(text)

    @property
    def notices(self) -> list[str]:
        """What could not be collected (a copy: the thread may still add to it)."""
        with self._lock:
            return list(self._notices)

    @property
    def samples(self) -> int:
        """Samples written so far."""
        with self._lock:
            return self._samples

    def start(self) -> None:
        """Probe what can be collected and start the thread."""
        if not self.items:
            return
        try:
            import psutil
        except ImportError:
            text = ("host_sys / host_sys_usage: psutil is not installed, nothing collected "
                    "(pip install psutil)")
            self._notice(text)
            self.items = []
            warnings.warn(HostSamplingWarning(text), stacklevel=3)
            return
        self._psutil = psutil
        proc = psutil.Process()
        if "disk" in self.items:
            try:
                proc.io_counters()
            except (AttributeError, psutil.Error, OSError) as exc:
                self.items.remove("disk")
                self._notice(f"host_sys disk: per-process I/O counters are not "
                             f"available here ({type(exc).__name__}); not collected")
        if "network" in self.items:
            try:
                if psutil.net_io_counters() is None:
                    raise OSError("no network counters")
            except (psutil.Error, OSError) as exc:
                self.items.remove("network")
                self._notice(f"host_sys network: system network counters are not "
                             f"available here ({exc}); not collected")
        notices = self.notices
        if notices:
            warnings.warn(HostSamplingWarning("; ".join(notices)), stacklevel=3)
        if not self.items:
            return
        self._thread = threading.Thread(target=self._run, args=(proc,),
                                        name="geplug-host-sampler", daemon=True)
        self._thread.start()

    def _run(self, proc: Any) -> None:
        """The thread: never raises (a failure ends sampling with a notice)."""
        psutil = self._psutil
        period = 1.0 / self.freq
        try:
            proc.cpu_percent(None)
            psutil.cpu_percent(None)
            last = {"t": time.monotonic(), "io": self._io(proc), "net": self._net()}
        except Exception as exc:
            self._notice(f"host sampling stopped: {type(exc).__name__}: {exc}")
            return
        t0 = time.monotonic()
        k = 0
        while True:
            k += 1
            delay = t0 + k * period - time.monotonic()
            if delay < -period:  # fell behind (e.g. a busy machine): re-anchor, no burst
                t0, k = time.monotonic(), 0
                delay = 0.0
            if self._stop.wait(max(0.0, delay)):
                return
            try:
                line = json.dumps(self._sample(proc, last)) + "\n"
                if self._stop.is_set():
                    return
                self.log.write(line)
                with self._lock:
                    self._samples += 1
            except Exception as exc:
                self._notice(f"host sampling stopped: {type(exc).__name__}: {exc}")
                return

    def _io(self, proc: Any) -> Any:
        return proc.io_counters() if "disk" in self.items else None

    def _net(self) -> Any:
        return self._psutil.net_io_counters() if "network" in self.items else None

    def _sample(self, proc: Any, last: dict[str, Any]) -> dict[str, float]:
        psutil = self._psutil
        now = time.monotonic()
        dt = max(1e-6, now - last["t"])
        s: dict[str, float] = {"ts": time.time() * 1e6}
        if "cpu" in self.items:
            s["proc_cpu"] = proc.cpu_percent(None)
        if "mem" in self.items:
            mem = proc.memory_info()
            s["proc_rss"], s["proc_vms"] = mem.rss / 2**20, mem.vms / 2**20
        if "disk" in self.items:
            io = proc.io_counters()
            s["disk_read"] = (io.read_bytes - last["io"].read_bytes) / 1024 / dt
            s["disk_write"] = (io.write_bytes - last["io"].write_bytes) / 1024 / dt
            last["io"] = io
        if "network" in self.items:
            net = psutil.net_io_counters()
            s["net_rx"] = (net.bytes_recv - last["net"].bytes_recv) / 1024 / dt
            s["net_tx"] = (net.bytes_sent - last["net"].bytes_sent) / 1024 / dt
            last["net"] = net
        if "usage_cpu" in self.items:
            s["sys_cpu"] = psutil.cpu_percent(None)
        if "usage_mem" in self.items:
            vm = psutil.virtual_memory()
            s["sys_total"], s["sys_used"], s["sys_pct"] = vm.total / 2**20, vm.used / 2**20, \
                vm.percent
        last["t"] = now
        return s

    def stop(self) -> None:
        """Stop the thread and wait for it (at most :data:`JOIN_TIMEOUT_S`).

        A thread still running after that (psutil blocked in the kernel, say) is left to end on
        its own, but its log is closed first so it can no longer write, and a notice says so.
        """
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is None:
            return
        thread.join(timeout=JOIN_TIMEOUT_S)
        if thread.is_alive():
            self.log.close()
            self._notice(f"host sampling: the sampler thread did not stop within "
                         f"{JOIN_TIMEOUT_S:g} s; samples after that were dropped")

    def write_notice(self, host_dir: str) -> str:
        """``host/collection_notice.txt``: what was collected and what could not be."""
        path = os.path.join(host_dir, "collection_notice.txt")
        if self.requested:
            lines = [f"collected at {self.freq} Hz: {', '.join(self.items) or 'nothing'}"]
        else:
            lines = ["host sampling not requested (profiling_options host_sys and "
                     "host_sys_usage are unset)"]
        lines += [f"not collected: {n}" for n in self.notices]
        write_text(path, "\n".join(lines) + "\n")
        return path
