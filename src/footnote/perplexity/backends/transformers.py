"""A GGUF dequantized and run by Hugging Face transformers: the float32 reference, and with
`bf16` footnote's scorer on CPUs with AMX, where torch's bfloat16 products score about 1.7x as
many tokens per second as float32 (`footnote bench ppl`), within 0.1% of its perplexity
(logits and log-softmax stay in float32).

Optional: needs the `gguf` and `accelerate` packages (the `dev` extra). Loading a GGUF
through transformers parses and dequantizes it in Python, which takes about a minute on
two cores, so the result is saved once as a regular transformers checkpoint in a cache
folder keyed by the GGUF's SHA-256 and reloaded from there in seconds.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from footnote.errors import ModelError
from footnote.models.registry import sha256_file
from footnote.models.scoring import Tokenizer, TokenScorer
from footnote.perplexity.logits import target_logprobs


class TransformersTokenizer(Tokenizer):
    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self.bos_id = tokenizer.bos_token_id
        probe = tokenizer("a").input_ids
        self.add_bos = bool(probe) and self.bos_id is not None and probe[0] == self.bos_id

    def tokenize(self, text: str) -> list[int]:
        return list(self._tokenizer(text, add_special_tokens=False, verbose=False).input_ids)

    def piece(self, token_id: int) -> bytes:
        return str(self._tokenizer.decode([token_id])).encode("utf-8")


def _checkpoint_from_gguf(gguf_path: Path, cache_root: Path) -> Path:
    """A transformers checkpoint of `gguf_path`, built on first use and kept under `cache_root`."""
    folder = cache_root / f"{gguf_path.stem}-{sha256_file(gguf_path)[:16]}"
    if (folder / "config.json").is_file():
        return folder
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    except ImportError as exc:
        raise ModelError(
            f"the transformers backend needs the gguf and accelerate packages to read {gguf_path.name} "
            f"({exc}); install them with `pip install -e '.[dev]'`"
        ) from exc
    partial = folder.with_name(folder.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)  # left by an interrupted run
    partial.parent.mkdir(parents=True, exist_ok=True)
    # transformers dequantizes every GGUF tensor on load; what remains of "gguf" is only a
    # marker that blocks saving, so the plain float32 model is saved without it.
    setattr(model, "hf_quantizer", None)  # noqa: B010 - typed as a module attribute by torch
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.rename(folder)
    return folder


class TransformersScorer(TokenScorer):
    """A causal LM in transformers; `source` is a checkpoint folder, a model id, or a GGUF file."""

    def __init__(
        self,
        source: Path | str,
        cache_dir: Path | None = None,
        threads: int = 0,
        display_name: str | None = None,
        bf16: bool = False,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        location = Path(source)
        if location.suffix == ".gguf":
            cache_root = cache_dir or Path(tempfile.gettempdir()) / "footnote-transformers"
            location = _checkpoint_from_gguf(location, cache_root)
        if threads:
            torch.set_num_threads(threads)
        self._torch = torch
        self._model: Any = AutoModelForCausalLM.from_pretrained(str(location), dtype=torch.float32)
        self._model.eval()
        self.tokenizer = TransformersTokenizer(AutoTokenizer.from_pretrained(str(location)))
        self.context_length = int(self._model.config.max_position_embeddings)
        self.name = display_name or f"transformers:{Path(str(source)).name}"
        self._bf16 = bf16

    def score_window(self, token_ids: Sequence[int], first_scored: int) -> list[float]:
        n = len(token_ids)
        keep = n - first_scored + 1  # rows first_scored-1 .. n-1; the last predicts past the window
        torch = self._torch
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self._bf16):
            ids = torch.tensor([list(token_ids)], dtype=torch.long)
            logits = self._model(input_ids=ids, logits_to_keep=keep).logits[0, :-1]
        rows = logits.float().numpy()
        return target_logprobs(rows, np.asarray(token_ids[first_scored:], dtype=np.intc))

    def score_continuation(
        self, contexts: Sequence[Sequence[int]], continuation: Sequence[int], batch: int = 16
    ) -> list[list[float]]:
        """Log-probabilities of `continuation`'s tokens after each of `contexts`, in order.

        Contexts are left-padded into batches of `batch`, so the continuation ends every row and
        only its positions reach the output layer."""
        torch = self._torch
        scored = len(continuation)
        results: list[list[float]] = []
        for start in range(0, len(contexts), batch):
            rows = [[*context, *continuation] for context in contexts[start : start + batch]]
            width = max(len(row) for row in rows)
            ids = torch.zeros((len(rows), width), dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for index, row in enumerate(rows):
                ids[index, width - len(row) :] = torch.tensor(row)
                mask[index, width - len(row) :] = 1
            positions = (mask.cumsum(1) - 1).clamp(min=0)
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self._bf16):
                logits = self._model(
                    input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=scored + 1
                ).logits[:, :-1]
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            targets = ids[:, width - scored :, None]
            results.extend(logprobs.gather(2, targets)[:, :, 0].tolist())
        return results
