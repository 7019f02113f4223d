"""A second footnote server as a remote scoring backend: the same PPL as scoring in process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import RunningServer, footnote_env

TEXT = (
    "The lighthouse at the harbour mouth was built of granite blocks quarried on the island. "
    "Its lens, ground in Paris, threw a beam that sailors could see twenty miles out to sea, "
    "and the keepers trimmed the wicks every evening before dusk."
)


def ppl_json(home: Path, *args: str, **env: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "footnote", "ppl", *args, "--json"],
        env=footnote_env(home, FOOTNOTE_THREADS="2", **env),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)["results"][0]
    return result


def test_ppl_through_a_remote_footnote_server_equals_in_process(
    served: RunningServer, tmp_path: Path
) -> None:
    text_file = tmp_path / "harbour.txt"
    text_file.write_text(TEXT, encoding="utf-8")
    # The server scores through llama.cpp; so does the in-process run it is compared with, on any CPU.
    local = ppl_json(tmp_path, str(text_file), "-c", "32", FOOTNOTE_SCORE_RUNTIME="llama.cpp")
    remote = ppl_json(
        tmp_path,
        str(text_file),
        "-c",
        "32",
        "-m",
        f"{served.base_url}/v1",
        FOOTNOTE_REMOTE_API_KEY=served.api_key,
    )
    assert remote["tokens_scored"] == local["tokens_scored"]
    assert remote["perplexity"] == pytest.approx(local["perplexity"], rel=1e-4)


def test_echo_logprobs_have_the_vllm_shape(served: RunningServer) -> None:
    reply = httpx.post(
        f"{served.base_url}/v1/completions",
        headers={"Authorization": f"Bearer {served.api_key}"},
        json={"model": "smollm2-135m", "prompt": TEXT, "echo": True, "max_tokens": 0, "logprobs": 2},
        timeout=120,
    )
    assert reply.status_code == 200, reply.text
    logprobs = reply.json()["choices"][0]["logprobs"]
    assert "".join(logprobs["tokens"]) == TEXT
    assert logprobs["token_logprobs"][0] is None and logprobs["top_logprobs"][0] is None
    assert all(value < 0 for value in logprobs["token_logprobs"][1:])
    assert all(2 <= len(top) <= 3 for top in logprobs["top_logprobs"][1:])
    assert all(
        TEXT[o:].startswith(t) for o, t in zip(logprobs["text_offset"], logprobs["tokens"], strict=True)
    )
    without_key = httpx.post(f"{served.base_url}/v1/perplexity", json={"text": TEXT}, timeout=30)
    assert without_key.status_code == 401
