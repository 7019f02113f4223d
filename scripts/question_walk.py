"""The walk of a question through footnote's own code: which source files it visits, and how often
it comes back to a file it already left.

The sample corpus is ingested into a scratch home, the question is asked once to load the models,
and asked again under a profiler that sees every Python call, on every thread the run starts:
each call into a file under `src/footnote` from another file is a step of the walk. A file is
visited when the walk first enters it; a return is a step into a file the walk entered before (a
caller resuming is not a step, nor is a call within one file), counted as calls and as distinct
caller-to-callee file pairs. `--api` asks through `/v1/chat/completions` in-process (the server's
route, its checks and rendering) instead of `Application.ask`.

    python scripts/question_walk.py "How do bees communicate?" --save benchmarks/results/walk.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "footnote"
SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample"


class Walk:
    """A profiler, on every thread started after it (the server's pools too), that records the
    calls between footnote's files while `measure` runs."""

    def __init__(self) -> None:
        self.on = False
        self.order: list[str] = []  # the files entered, in order
        self.entered: set[str] = set()  # the same, to look up
        self.returns = 0
        self.edges: set[tuple[str, str]] = set()
        threading.setprofile(self._profile)

    def close(self) -> None:
        """Threads started from now on run unprofiled."""
        threading.setprofile(None)

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if self.on:
            self.step(frame, event, arg)

    def measure(self, run: Any) -> dict[str, Any]:
        self.order, self.entered, self.returns, self.edges = [], set(), 0, set()
        self.on = True
        sys.setprofile(self._profile)
        try:
            run()
        finally:
            sys.setprofile(None)
            self.on = False
        files = [str(Path(name).relative_to(PACKAGE.parent)) for name in self.order]
        return {
            "files": len(files),
            "returns": self.returns,
            "return_edges": len(self.edges),
            "visited": files,
        }

    def step(self, frame: Any, event: str, _arg: Any) -> None:
        if event != "call":
            return
        name = frame.f_code.co_filename
        caller = frame.f_back.f_code.co_filename if frame.f_back is not None else ""
        if not name.startswith(str(PACKAGE)) or name == caller:
            return
        if name in self.entered:
            self.returns += 1
            self.edges.add((caller, name))
        else:
            self.entered.add(name)
            self.order.append(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--api", action="store_true", help="ask through /v1/chat/completions")
    parser.add_argument("--save", type=Path, help="write the walk here as JSON")
    args = parser.parse_args()

    from footnote.application import create_app
    from footnote.config import Settings

    walk = Walk()
    with tempfile.TemporaryDirectory(prefix="footnote-walk-") as scratch:
        app = create_app(Settings(home=Path(scratch) / "home"))
        app.ingest([SAMPLE])
        if args.api:
            from fastapi.testclient import TestClient

            from footnote.server.app import create_server

            client = TestClient(create_server(app.settings, app))
            body = {"model": "footnote", "messages": [{"role": "user", "content": args.question}]}

            def ask() -> None:
                client.post("/v1/chat/completions", json=body).raise_for_status()
        else:

            def ask() -> None:
                app.ask(args.question)

        ask()  # models loaded, caches warm: the walk is a question's, not a start's
        result = {"question": args.question, "through": "api" if args.api else "cli", **walk.measure(ask)}
        app.close()
    walk.close()
    print(
        f"{result['files']} files, {result['returns']} calls back into a file already visited "
        f"({result['return_edges']} distinct caller-callee pairs)"
    )
    if args.save:
        args.save.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
