"""The ingest display's rate: items over the time since the ingest's first report."""

from __future__ import annotations

from rich.progress import Progress

from footnote.cli.progress import RateColumn


def test_a_stage_that_appears_late_is_timed_from_the_first_report() -> None:
    now = [10.0]
    bar = Progress(get_time=lambda: now[0], disable=True)
    now[0] = 14.0  # the first window of chunks took 4 s before the embedding task appeared
    task = bar.add_task("embedding chunks", total=80, unit="chunks", since=10.0)
    now[0] = 18.0
    bar.update(task, completed=80)
    assert RateColumn().render(bar.tasks[0]).plain == "10 chunks/s"  # 80 over 8 s, not over 4 s

    plain = bar.add_task("parsing files", total=4, unit="files")  # no `since`: its own time
    now[0] = 20.0
    bar.update(plain, completed=4)
    assert RateColumn().render(bar.tasks[1]).plain == "2 files/s"
