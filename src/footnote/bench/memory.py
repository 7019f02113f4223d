"""The server's resident memory: from its process id (psutil) or its /metrics page."""

from __future__ import annotations

from collections.abc import Callable

import httpx


def rss_reader(url: str, pid: int | None, api_key: str | None = None) -> Callable[[], int | None]:
    if pid is not None:
        import psutil

        process = psutil.Process(pid)
        return lambda: int(process.memory_info().rss)

    def from_metrics() -> int | None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        try:
            text = httpx.get(f"{url}/metrics", headers=headers, timeout=5).text
        except httpx.HTTPError:
            return None
        for line in text.splitlines():
            if line.startswith("process_resident_memory_bytes "):
                return int(float(line.split()[1]))
        return None

    return from_metrics
