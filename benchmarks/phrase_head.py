"""A phrase head for the sentence reader: can it point at the answer inside the best sentence,
rank the sentences better, or tell when nothing answers?

Trains the shipped reader's encoder (from the checkpoint `make reader` leaves beside the
bundled reader, `src/footnote/models/reader.pt`) with a start/end head over the candidate's
tokens, SQuAD-style: the answering sentence's answer span is the target, and an unanswerable
question's distractor sentence (and one other sentence of each question) points at the first
token, "no phrase". The training takes the 8 SQuAD articles
the shipped reader trained on; the 3 it never saw, docqa-dev's evidence sentences and both
sets' retrieved sentences (as the engine reads them) measure it. Reports:

- on the 3 unseen articles: exact match and F1 of the phrase, and how well the phrase's margin
  over "no phrase" (best over a question's candidates) tells answerable from unanswerable
  questions, beside the shipped answer head on the same candidates;
- on docqa-dev's evidence sentences (never trained on): the phrase's exact match;
- over the engine's sentences: passage@1 with the margin added to the engine's scores, its AUC,
  and how often the best passage's phrase holds the answer at each margin.

    python benchmarks/phrase_head.py --start src/footnote/models/reader.pt \\
        --docqa ../shared/data/docqa-dev --docqa-home /tmp/h-docqa \\
        --squad-set ../shared/data/squad2-dev --squad-home /tmp/h-squad
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from evidence_ablation import read_set
from reader_blend import auc, save_result

from footnote.answer import evidence
from footnote.evaluation.docqa import contains_answer
from footnote.models.cpu import machine
from footnote.models.registry import REGISTRY, resolve_registered
from footnote.models.sentence_reader import NO_ANSWER_CANDIDATE, pair_arrays, reader_input
from footnote.training.reader_data import _article_sentences, near_misses
from footnote.training.reader_fit import load_tokenizer, load_weights

HELD_OUT = ("Steam_engine", "Islamism", "Scottish_Parliament")  # as the shipped reader's training
MAX_PHRASE_TOKENS = 30
MARGINS = (-2.0, 0.0, 2.0, 4.0)


class PhraseReader(torch.nn.Module):
    """The reader's encoder with a start/end logit for every token; padding and the question's
    tokens can never be chosen, the first token stands for "no phrase"."""

    def __init__(self, encoder: Any) -> None:
        super().__init__()
        self.encoder = encoder
        self.phrase = torch.nn.Linear(encoder.config.hidden_size, 2)

    def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> tuple[Any, Any]:
        hidden = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        logits = self.phrase(hidden)
        allowed = (token_type_ids == 1) & (attention_mask == 1)
        allowed[:, 0] = True
        logits = logits.masked_fill(~allowed.unsqueeze(-1), -1e4)
        return logits[..., 0], logits[..., 1]


def squad_pairs(path: Path, rng: random.Random) -> list[dict]:
    """Each question with its (candidate, answer texts or None) pairs: the answering sentence
    (or the distractor's), one other of its paragraph and its nearest miss elsewhere."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    questions = []
    for article in data:
        title = article["title"].replace("_", " ")
        sentences = list(_article_sentences(article["paragraphs"]))
        for index, paragraph in enumerate(article["paragraphs"]):
            own = [s for s in sentences if s.paragraph == index]
            others = [s for s in sentences if s.paragraph != index]
            for qa in paragraph["qas"]:
                answers = qa.get("answers") or []
                marks = [a["answer_start"] for a in answers or qa.get("plausible_answers") or []]
                target = [s for s in own if any(s.start <= x < s.end for x in marks)][:1]
                pairs = []
                for s in target:
                    texts = [
                        " ".join(a["text"].split()) for a in answers if s.start <= a["answer_start"] < s.end
                    ]
                    pairs.append((reader_input(s.text, title, s.lead), texts or None))
                rest = [s for s in own if s not in target]
                if rest:
                    s = rng.choice(rest)
                    pairs.append((reader_input(s.text, title, s.lead), None))
                pairs += [
                    (reader_input(s.text, title, s.lead), None)
                    for s in near_misses(qa["question"], others, 1)
                ]
                questions.append(
                    {
                        "question": qa["question"].strip(),
                        "pairs": pairs,
                        "group": article["title"],
                        "answerable": bool(answers),
                    }
                )
    return questions


def target_tokens(encoding: Any, candidate: str, texts: list[str] | None) -> tuple[int, int] | None:
    """The first and last token of an answer text in `candidate`; (0, 0) for "no phrase"; None
    when no answer text is found whole in the candidate."""
    if not texts:
        return 0, 0
    for text in texts:
        at = candidate.find(text)
        if at < 0:
            continue
        tokens = [
            i
            for i, (kind, (start, end)) in enumerate(zip(encoding.type_ids, encoding.offsets, strict=True))
            if kind == 1 and end > at and start < at + len(text)
        ]
        if tokens:
            return tokens[0], tokens[-1]
    return None


def feeds(encodings: Any) -> dict:
    arrays = pair_arrays([e.ids for e in encodings], [e.type_ids for e in encodings])
    return {k: torch.from_numpy(v) for k, v in arrays.items()}


def best_phrase(starts: np.ndarray, ends: np.ndarray, type_ids: Any) -> tuple[float, int, int]:
    """(margin of the best phrase over "no phrase", its first token, its last token)."""
    tokens = np.array([i for i, kind in enumerate(type_ids) if kind == 1])
    best, first, last = -1e9, 0, 0
    for i in tokens:
        window = tokens[(tokens >= i) & (tokens < i + MAX_PHRASE_TOKENS)]
        j = int(window[np.argmax(ends[window])])
        if starts[i] + ends[j] > best:
            best, first, last = float(starts[i] + ends[j]), int(i), j
    return best - float(starts[0] + ends[0]), first, last


def phrase_text(candidate: str, encoding: Any, first: int, last: int) -> str:
    return (
        " ".join(candidate[encoding.offsets[first][0] : encoding.offsets[last][1]].split()) if first else ""
    )


def train(model: PhraseReader, tokenizer: Any, questions: list[dict], epochs: float, seed: int) -> dict:
    rng = random.Random(seed)
    pairs = []
    for q in questions:
        for candidate, texts in q["pairs"]:
            encoding = tokenizer.encode(q["question"], candidate)
            target = target_tokens(encoding, candidate, texts)
            if target is not None:
                pairs.append((encoding, target))
    pairs.sort(key=lambda p: len(p[0].ids) // 16)
    steps = [pairs[i : i + 32] for i in range(0, len(pairs), 32)]
    total = int(len(steps) * epochs)
    plan: list = []
    while len(plan) < total:
        order = list(steps)
        rng.shuffle(order)
        plan.extend(order)
    plan = plan[:total]
    model.encoder.embeddings.word_embeddings.weight.requires_grad_(False)
    encoder = [p for n, p in model.named_parameters() if p.requires_grad and n.startswith("encoder.")]
    optimiser = torch.optim.AdamW(
        [{"params": encoder, "lr": 5e-5}, {"params": model.phrase.parameters(), "lr": 1e-3}],
        weight_decay=0.01,
    )
    warmup = max(1, total // 16)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda k: min((k + 1) / warmup, max(0.0, (total - k) / max(1, total - warmup)))
    )
    model.train()
    losses, started = [], time.monotonic()
    for number, step in enumerate(plan):
        starts, ends = model(**feeds([p[0] for p in step]))
        first = torch.tensor([p[1][0] for p in step])
        last = torch.tensor([p[1][1] for p in step])
        loss = (
            torch.nn.functional.cross_entropy(starts, first) + torch.nn.functional.cross_entropy(ends, last)
        ) / 2
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        losses.append(float(loss))
        if number % 50 == 0:
            print(
                f"step {number}/{total} loss {losses[-1]:.3f} ({time.monotonic() - started:.0f} s)",
                flush=True,
            )
    model.eval()
    tenth = max(1, len(losses) // 10)
    return {
        "pairs": len(pairs),
        "steps": total,
        "seconds": round(time.monotonic() - started, 1),
        "loss_first_tenth": round(sum(losses[:tenth]) / tenth, 4),
        "loss_last_tenth": round(sum(losses[-tenth:]) / tenth, 4),
    }


def overlap_f1(predicted: str, gold: str) -> float:
    p, g = predicted.lower().split(), gold.lower().split()
    common = sum(min(p.count(w), g.count(w)) for w in set(p))
    return 0.0 if common == 0 else 2 * common / (len(p) + len(g))


@torch.inference_mode()
def unseen_articles(model: PhraseReader, answer_head: Any, tokenizer: Any, questions: list[dict]) -> dict:
    labels, margins, shares, exact, f1 = [], [], [], [], []
    for q in questions:
        encodings = [tokenizer.encode(q["question"], c) for c, _ in q["pairs"]]
        starts, ends = model(**feeds(encodings))
        found = [best_phrase(starts[i].numpy(), ends[i].numpy(), e.type_ids) for i, e in enumerate(encodings)]
        chosen = int(np.argmax([f[0] for f in found]))
        labels.append(int(q["answerable"]))
        margins.append(found[chosen][0])
        with_none = [*encodings, tokenizer.encode(q["question"], NO_ANSWER_CANDIDATE)]
        answered = torch.softmax(answer_head(**feeds(with_none))[:, 1], 0)
        shares.append(float(1 - answered[-1]))
        gold = q["pairs"][0][1]
        if q["answerable"] and gold:
            predicted = phrase_text(
                q["pairs"][chosen][0], encodings[chosen], found[chosen][1], found[chosen][2]
            )
            exact.append(max(float(predicted.lower() == g.lower()) for g in gold))
            f1.append(max(overlap_f1(predicted, g) for g in gold))
    return {
        "questions": len(questions),
        "phrase_exact_match": round(float(np.mean(exact)), 4),
        "phrase_f1": round(float(np.mean(f1)), 4),
        "auc_phrase_margin": separation(margins, labels),
        "auc_answer_head": separation(shares, labels),
    }


@torch.inference_mode()
def docqa_evidence(model: PhraseReader, tokenizer: Any, dataset: Path) -> dict:
    rows = [
        json.loads(line) for line in (dataset / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    exact, holds = [], []
    for row in rows:
        if not row.get("answers") or not row.get("evidence"):
            continue
        candidate = reader_input(row["evidence"], row["source"])
        encoding = tokenizer.encode(row["question"], candidate)
        starts, ends = model(**feeds([encoding]))
        _, first, last = best_phrase(starts[0].numpy(), ends[0].numpy(), encoding.type_ids)
        predicted = phrase_text(candidate, encoding, first, last)
        exact.append(any(predicted.lower() == a.lower() for a in row["answers"]))
        holds.append(
            bool(predicted) and contains_answer(predicted, row["answers"]) and len(predicted.split()) <= 12
        )
    return {
        "questions": len(exact),
        "phrase_exact_match": round(float(np.mean(exact)), 4),
        "phrase_holds_an_answer": round(float(np.mean(holds)), 4),
    }


@torch.inference_mode()
def engine_sentences(
    model: PhraseReader, tokenizer: Any, dataset: Path, home: Path, per_group: int, trained: set[str]
) -> dict:
    args = argparse.Namespace(
        dataset=dataset, home=home, top_k=5, per_group=per_group, reader=None, reader_for=None
    )
    read, count = read_set(args, vectors=False)
    rows = []
    for r in read:
        candidates = evidence.reader_candidates(r.hits, r.spans, r.texts)
        margins, phrases = [], []
        for i in range(0, len(candidates), 16):
            encodings = [tokenizer.encode(r.item.question, c) for c in candidates[i : i + 16]]
            starts, ends = model(**feeds(encodings))
            for k, encoding in enumerate(encodings):
                margin, first, last = best_phrase(starts[k].numpy(), ends[k].numpy(), encoding.type_ids)
                margins.append(margin)
                phrases.append(phrase_text(candidates[i + k], encoding, first, last))
        blend = evidence.score_sentences(r.item.question, r.spans, None, r.texts)
        rows.append((r, evidence.with_reader(blend, r.logits), margins, phrases))
    groups = {
        "unseen": [x for x in rows if x[0].item.source not in trained],
        "trained": [x for x in rows if x[0].item.source in trained],
    }
    report = {}
    for name, part in groups.items():
        if not part:
            continue
        figures: dict = {"questions": len(part), "passage_at_1": {}}
        for weight in (0.0, 0.1, 0.2, 0.3, 0.5):
            hold = []
            for r, scores, margins, _ in part:
                if not r.item.answerable:
                    continue
                mixed = [
                    s + weight / (1 + math.exp(-max(-30.0, min(30.0, m))))
                    for s, m in zip(scores, margins, strict=True)
                ]
                passages = evidence.select_passages(r.hits, r.spans, mixed, count)
                hold.append(bool(passages) and contains_answer(passages[0].text(r.hits), r.item.answers))
            figures["passage_at_1"][str(weight)] = round(float(np.mean(hold)), 4)
        figures["auc_phrase_margin"] = separation(
            [max(m) for _, _, m, _ in part], [int(r.item.answerable) for r, *_ in part]
        )
        shown: dict = {}
        answerable = [(r, s, m, p) for r, s, m, p in part if r.item.answerable]
        for floor in MARGINS:
            picked = []
            for r, scores, margins, phrases in answerable:
                best = int(np.argmax(scores))
                if margins[best] >= floor:
                    phrase = phrases[best]
                    picked.append(
                        bool(phrase) and contains_answer(phrase, r.item.answers) and len(phrase.split()) <= 12
                    )
            shown[str(floor)] = {
                "shown": round(len(picked) / max(1, len(answerable)), 4),
                "holds_an_answer": round(float(np.mean(picked)), 4) if picked else None,
            }
        figures["best_sentence_phrase_by_margin"] = shown
        report[name] = figures
    return report


def separation(values: list[float], labels: list[int]) -> float:
    return round(auc(np.array(values), np.array(labels, dtype=bool)), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=Path, required=True, help="the reader checkpoint (.pt) to start from")
    parser.add_argument("--squad-set", type=Path, required=True, help="the squad2-dev folder")
    parser.add_argument("--squad-home", type=Path, required=True)
    parser.add_argument("--docqa", type=Path, required=True, help="the docqa-dev folder")
    parser.add_argument("--docqa-home", type=Path, required=True)
    parser.add_argument(
        "--per-group", type=int, default=40, help="squad2-dev questions per article read by the engine"
    )
    parser.add_argument("--epochs", type=float, default=1.5)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(13)
    torch.set_num_threads(2)
    base = resolve_registered(REGISTRY["minilm-l6"])
    tokenizer = load_tokenizer(base)
    questions = squad_pairs(args.squad_set / "squad-v2.0.json", random.Random(args.seed))
    training = [q for q in questions if q["group"] not in HELD_OUT]
    trained = {f"{q['group']}.md" for q in training}  # the engine's group is the article's file
    model = PhraseReader(load_weights(base, args.start).encoder)
    report: dict = {"start": str(args.start), "held_out_articles": list(HELD_OUT), "epochs": args.epochs}
    report["training"] = train(model, tokenizer, training, args.epochs, args.seed)
    answer_head = load_weights(base, args.start)
    unseen = [q for q in questions if q["group"] in HELD_OUT]
    report["squad_unseen_articles"] = unseen_articles(model, answer_head, tokenizer, unseen[::2])
    report["docqa_evidence"] = docqa_evidence(model, tokenizer, args.docqa)
    report["docqa_engine"] = engine_sentences(model, tokenizer, args.docqa, args.docqa_home, 0, trained)
    report["squad_engine"] = engine_sentences(
        model, tokenizer, args.squad_set, args.squad_home, args.per_group, trained
    )
    report["machine"] = machine()
    print(json.dumps({k: v for k, v in report.items() if k != "machine"}, indent=1))
    save_result("phrase_head", "", report)


if __name__ == "__main__":
    main()
