"""The cores other processes leave free, so that footnote's threads share a busy machine.

llama.cpp's threads wait for one another at every step of a generation: with as many threads as
cores and another process keeping a core busy, each step waits for a thread the scheduler has not
run yet. So the generator takes as many threads as the cores others leave free, read before each
answer: on 2 cores with a busy loop beside, 20 docqa-dev answers took p50 1.61 s against 1.10 s
quiet, where on both cores they took 2.68 s against 1.09 s
(`busy_answers-docqa-dev-busy-1-20261206-224949.json.xz`).

What others use is sampled in the background, every `INTERVAL` seconds over the last `WINDOW`:
the machine's busy time (`/proc/stat`) less this process's own (`/proc/self/stat`), both in
clock ticks. Where `/proc` is not there, no core counts as taken.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from pathlib import Path

INTERVAL = 0.25  # seconds between samples
WINDOW = 1.0  # seconds the busy share is measured over
# A core counts as taken by others when they keep more than this share of one busy.
TAKEN = 0.5
_STAT = Path("/proc/stat")
_SELF = Path("/proc/self/stat")


def _machine_ticks() -> tuple[int, int]:
    """All CPUs' ticks since boot: in all, and busy (neither idle nor waiting for I/O)."""
    fields = [int(value) for value in _STAT.read_text().split("\n", 1)[0].split()[1:]]
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is in user)
    return total, total - fields[3] - fields[4]


def _own_ticks() -> int:
    """This process's CPU ticks since it began, every thread's, user and system."""
    # The command name may hold spaces: the fields after it start past its closing parenthesis.
    after = _SELF.read_text().rsplit(")", 1)[1].split()
    return int(after[11]) + int(after[12])  # utime, stime (fields 14 and 15)


class CoreShare:
    """The busy cores of other processes, sampled by a daemon thread started on first use."""

    def __init__(self, cores: int | None = None) -> None:
        self.cores = cores or os.cpu_count() or 1
        self._samples: deque[tuple[float, int, int, int]] = deque()
        self._lock = threading.Lock()
        self._started = False
        self.readable = _STAT.exists() and _SELF.exists()

    def others(self) -> float:
        """The cores other processes kept busy over the last window (0 until two samples)."""
        self._start()
        with self._lock:
            if len(self._samples) < 2:
                return 0.0
            (_, total0, busy0, own0), (_, total1, busy1, own1) = self._samples[0], self._samples[-1]
        spent = total1 - total0
        if spent <= 0:
            return 0.0
        return max(0.0, (busy1 - busy0) - (own1 - own0)) / spent * self.cores

    def free(self) -> int:
        """The cores others leave free, one at least."""
        taken = int(self.others() + (1.0 - TAKEN))
        return max(1, self.cores - taken)

    def _start(self) -> None:
        if self._started or not self.readable:
            return
        with self._lock:
            if self._started:
                return
            self._started = True
            self._sample()
        threading.Thread(target=self._run, name="footnote-core-share", daemon=True).start()

    def _run(self) -> None:
        while True:
            time.sleep(INTERVAL)
            with self._lock:
                self._sample()

    def _sample(self) -> None:
        now = time.monotonic()
        total, busy = _machine_ticks()
        self._samples.append((now, total, busy, _own_ticks()))
        while len(self._samples) > 2 and now - self._samples[1][0] >= WINDOW:
            self._samples.popleft()


_SHARE = CoreShare()


def free_cores() -> int:
    """The cores other processes leave free now, one at least (every core where it cannot tell)."""
    return _SHARE.free()
