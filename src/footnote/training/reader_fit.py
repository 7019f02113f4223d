"""Training the sentence reader: MiniLM's encoder with a one-logit head, fitted on reader examples.

The encoder starts from the bundled all-MiniLM-L6-v2 weights (mean pooling, as it was trained)
and its word embeddings stay frozen, which keeps what it knows of words the examples never show
and halves the optimiser's work. Each step takes whole questions: every candidate's logit is
pushed towards its label (binary cross-entropy, so scores mean the same across questions and a
question with no answering sentence can be told apart), and, for an answerable question, its
answering sentences are pushed above its other candidates (a softmax over the question's
candidates). Plain torch on the CPU; the seed fixes the order, the sampling and the head.

With an answer head (`answer_head`), a second linear head on the same pooled encoding learns
whether the question is answered: each question's candidates and NO_ANSWER_CANDIDATE share a
softmax of that head's logits, towards the answering sentences or, for an unanswerable question,
towards the no-answer candidate. The first head keeps its own loss on the sentences alone, so
ranking them never asks it to place a near-miss below a threshold.

Training may continue from a checkpoint a run wrote (`FitParams.start`), or from the reader
footnote ships (`start="footnote"`): its int8 graph read back into float weights (`read_back`).
"""

from __future__ import annotations

import logging
import math
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from footnote.errors import ModelError
from footnote.models.sentence_reader import (
    BUNDLED_READER,
    MAX_PAIR_TOKENS,
    NO_ANSWER_CANDIDATE,
    bundled_reader_files,
)
from footnote.training.reader_data import ReaderExample

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FitParams:
    epochs: float = 1.0
    pairs_per_step: int = 48
    learning_rate: float = 6e-5
    head_learning_rate: float = 2e-3
    warmup: float = 0.06
    listwise_weight: float = 1.0
    seed: int = 13
    threads: int = 2
    max_steps: int = 0  # 0: as many as `epochs` take
    # A checkpoint (`save_weights`) to continue from, "footnote" for the shipped reader (`read_back`);
    # empty: the base's weights.
    start: str = ""
    no_answer: bool = False  # also train NO_ANSWER_CANDIDATE, the unanswerable questions' target
    answer_head: bool = False  # train NO_ANSWER_CANDIDATE on a second head, beside the ranking one


def build_model(base: Path, answer_head: bool = False) -> Any:
    """The reader network on `base` (a BERT-style sentence-transformers folder): one logit per
    pair, or with `answer_head` two (ranking, answered)."""
    import torch
    from transformers import AutoModel

    class Reader(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = AutoModel.from_pretrained(str(base), local_files_only=True)
            self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)
            if answer_head:
                self.answer_head = torch.nn.Linear(self.encoder.config.hidden_size, 1)

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)
            if answer_head:
                return torch.cat([self.head(pooled), self.answer_head(pooled)], dim=-1)
            return self.head(pooled).squeeze(-1)

    return Reader()


def load_tokenizer(base: Path) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_PAIR_TOKENS, strategy="only_second")
    return tokenizer


def _steps(examples: Sequence[ReaderExample], pairs: int, rng: random.Random) -> list[list[ReaderExample]]:
    """Questions packed into steps of about `pairs` candidates, questions of similar length
    together (little of a step is padding), the steps in random order."""
    order = list(examples)
    rng.shuffle(order)
    order.sort(key=lambda e: max(len(e.question) + len(c) for c in e.candidates) // 32)
    steps: list[list[ReaderExample]] = [[]]
    size = 0
    for example in order:
        if size and size + len(example.candidates) > pairs:
            steps.append([])
            size = 0
        steps[-1].append(example)
        size += len(example.candidates)
    steps = [step for step in steps if step]
    rng.shuffle(steps)
    return steps


def fit_reader(
    examples: Sequence[ReaderExample],
    base: Path,
    params: FitParams = FitParams(),
    progress: Callable[[int, int, float], None] | None = None,
) -> tuple[Any, list[float]]:
    """The trained network and the loss of every step."""
    import torch

    from footnote.models.sentence_reader import pair_arrays

    torch.manual_seed(params.seed)
    torch.set_num_threads(params.threads)
    rng = random.Random(params.seed)
    tokenizer = load_tokenizer(base)
    if params.start == BUNDLED_READER:
        model = read_back(bundled_reader_files().graph, base).train()
        if hasattr(model, "answer_head") and not params.answer_head:
            raise ModelError("the shipped reader has an answer head: continue it with --answer-head")
    elif params.start:
        model = load_weights(base, Path(params.start), params.answer_head or None).train()
    else:
        model = build_model(base, params.answer_head)
    model.encoder.embeddings.word_embeddings.weight.requires_grad_(False)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    encoder = [p for n, p in named if n.startswith("encoder.")]
    heads = [p for n, p in named if not n.startswith("encoder.")]
    optimiser = torch.optim.AdamW(
        [{"params": encoder, "lr": params.learning_rate}, {"params": heads, "lr": params.head_learning_rate}],
        weight_decay=0.01,
    )
    plan = _plan(examples, params, rng)
    total = len(plan)
    warmup = max(1, int(params.warmup * total))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min((step + 1) / warmup, max(0.0, (total - step) / max(1, total - warmup)))
    )
    model.train()
    losses: list[float] = []
    started = time.monotonic()
    for number, step in enumerate(plan):
        encoded = [tokenizer.encode_batch([(e.question, c) for c in _candidates(e, params)]) for e in step]
        flat = [enc for batch in encoded for enc in batch]
        feeds = {
            k: torch.from_numpy(v)
            for k, v in pair_arrays([e.ids for e in flat], [e.type_ids for e in flat]).items()
        }
        logits = model(**feeds)
        loss = _loss(logits, step, params.listwise_weight, params.no_answer or params.answer_head)
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        scheduler.step()
        losses.append(float(loss.detach()))
        if progress is not None:
            progress(number + 1, total, losses[-1])
        elif (number + 1) % 50 == 0:
            log.info("step %d/%d loss %.4f (%.0f s)", number + 1, total, loss, time.monotonic() - started)
    model.eval()
    return model, losses


def _plan(
    examples: Sequence[ReaderExample], params: FitParams, rng: random.Random
) -> list[list[ReaderExample]]:
    """The training steps, in order: `params.epochs` passes over the examples, `max_steps` at most."""
    plan: list[list[ReaderExample]] = []
    while len(plan) < max(1, math.ceil(params.epochs * len(_steps(examples, params.pairs_per_step, rng)))):
        plan.extend(_steps(examples, params.pairs_per_step, rng))
    total = math.ceil(params.epochs * len(_steps(examples, params.pairs_per_step, random.Random(0))))
    if params.max_steps:
        total = min(total, params.max_steps)
    return plan[:total]


def _candidates(example: ReaderExample, params: FitParams) -> tuple[str, ...]:
    with_no_answer = params.no_answer or params.answer_head
    return (*example.candidates, NO_ANSWER_CANDIDATE) if with_no_answer else example.candidates


def _loss(logits: Any, step: Sequence[ReaderExample], listwise_weight: float, no_answer: bool = False) -> Any:
    """Binary cross-entropy on every candidate, plus a softmax over each question's candidates
    towards its answering ones; with `no_answer`, each question's last logit is NO_ANSWER_CANDIDATE's,
    labelled 1 when nothing answers, and the softmax of every question, answerable
    or not, takes it among its candidates. Two logits per pair (an answer head): the first head's
    loss on the sentences alone, and that softmax over the second head's logits."""
    import torch

    labels = torch.tensor(
        [float(x) for e in step for x in (*e.labels, *((not e.answerable,) if no_answer else ()))]
    )
    if logits.dim() == 2:
        sentences = torch.tensor([x for e in step for x in (*(True,) * len(e.candidates), False)])
        ranking = _loss(logits[sentences, 0], step, listwise_weight)
        return ranking + listwise_weight * _softmax_terms(logits[:, 1], labels, step, no_answer=True)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
    listwise = _softmax_terms(logits, labels, step, no_answer)
    return loss if listwise is None else loss + listwise_weight * listwise


def _softmax_terms(logits: Any, labels: Any, step: Sequence[ReaderExample], no_answer: bool) -> Any:
    """The mean, over the questions with a positive, of a softmax over each question's rows
    towards its positive ones (None when no question has one)."""
    import torch

    terms = []
    offset = 0
    for example in step:
        size = len(example.candidates) + int(no_answer)
        if example.answerable or no_answer:
            scores = logits[offset : offset + size]
            positive = labels[offset : offset + size] > 0
            terms.append(torch.logsumexp(scores, 0) - torch.logsumexp(scores[positive], 0))
        offset += size
    return torch.stack(terms).mean() if terms else None


def score_examples(model: Any, base: Path, examples: Sequence[ReaderExample]) -> list[list[float]]:
    """The trained network's logits for every candidate of every example (torch, for evaluation)."""
    import torch

    from footnote.models.sentence_reader import pair_arrays

    tokenizer = load_tokenizer(base)
    scores = []
    with torch.inference_mode():
        for example in examples:
            encoded = tokenizer.encode_batch([(example.question, c) for c in example.candidates])
            feeds = pair_arrays([e.ids for e in encoded], [e.type_ids for e in encoded])
            logits = model(**{k: torch.from_numpy(v) for k, v in feeds.items()})
            scores.append((logits[:, 0] if logits.dim() == 2 else logits).tolist())
    return scores


def save_weights(model: Any, path: Path) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), path)


def load_weights(base: Path, path: Path, answer_head: bool | None = None) -> Any:
    """The network `save_weights` wrote, on `base`; `answer_head=True` adds an answer head, newly
    initialised, to weights saved without one (None: as they were saved)."""
    import torch

    state = torch.load(path, map_location="cpu")
    saved_with_head = any(name.startswith("answer_head.") for name in state)
    model = build_model(base, answer_head=saved_with_head if answer_head is None else answer_head)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or any(not name.startswith("answer_head.") for name in missing):
        raise ModelError(
            f"{path} does not hold this reader's weights (missing {missing}, unexpected {unexpected}); "
            "pass --start the .pt file `footnote train reader` wrote"
        )
    return model.eval()


# The names the export gives a matrix product's output, and the weight each product holds.
_LAYER_PRODUCT = re.compile(
    r"^/encoder/encoder/(layer\.\d+)/(attention/self/(?:query|key|value)|attention/output/dense"
    r"|intermediate/dense|output/dense)/MatMul"
)
_HEAD_PRODUCT = re.compile(r"^/(head|answer_head)/Gemm")
_QUANTIZED = ("_quantized", "_scale", "_zero_point")
_UNUSED = "encoder.pooler."  # the pooled encoding is a mean: the pooler is neither run nor exported


def read_back(graph: Path, base: Path) -> Any:
    """The network of the int8 graph `export_reader` wrote (`graph`), on `base`, in float weights:
    each quantized weight `(q - zero_point) * scale` (one scale per output channel; one per table
    for the embeddings), the products left in float as they are. A ModelError where a weight of
    the network is not found in the graph, or the graph holds one it lacks."""
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper

    nodes = onnx.load(str(graph)).graph
    arrays = {t.name: numpy_helper.to_array(t) for t in nodes.initializer}

    def dequantized(name: str) -> Any:
        raw = arrays[f"{name}_quantized"].astype(np.float32)
        return (raw - arrays[f"{name}_zero_point"].astype(np.float32)) * arrays[f"{name}_scale"]

    weights = {n: a for n, a in arrays.items() if not n.startswith("onnx::") and not n.endswith(_QUANTIZED)}
    tables = [n for n in arrays if n.startswith("encoder.embeddings.") and n.endswith("_quantized")]
    for table in tables:
        weights[table.removesuffix("_quantized")] = dequantized(table.removesuffix("_quantized"))
    for node in nodes.node:
        layer = _LAYER_PRODUCT.match(node.output[0])
        found = layer or _HEAD_PRODUCT.match(node.output[0])
        if node.op_type not in ("MatMul", "MatMulInteger") or found is None:
            continue
        product = node.input[1]
        quantized = product.endswith("_quantized")
        matrix = dequantized(product.removesuffix("_quantized")) if quantized else arrays[product]
        target = f"encoder.encoder.{found[1]}.{found[2].replace('/', '.')}" if layer else found[1]
        weights[f"{target}.weight"] = matrix.T  # a product's weight is the Linear's, transposed
    model = build_model(base, answer_head="answer_head.weight" in weights)
    own = model.state_dict()
    missing = [n for n in own if n not in weights and not n.startswith(_UNUSED)]
    unexpected = [n for n in weights if n not in own]
    if missing or unexpected:
        raise ModelError(
            f"{graph} is not a reader graph `footnote train reader` wrote (missing {missing[:5]}, "
            f"unexpected {unexpected[:5]}); restore it with `git checkout src/footnote/models/reader`"
        )
    read = {n: torch.from_numpy(np.array(a, dtype=np.float32)) for n, a in weights.items()}  # copies
    model.load_state_dict({**own, **read})
    return model.eval()
