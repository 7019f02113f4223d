"""Whether questions over technical documents teach the sentence reader what SQuAD does not:
a document question set is read through footnote's own retrieval (every sentence of the top-k
chunks, as the answer engine reads them), and the reader, continued from a SQuAD-trained
checkpoint, is fine-tuned on the questions of the other documents and scored on each held-out
fold (folds by document, the same as `reader_blend.py`).

Reported side by side, in one run: passage@1 (the answer in the quoted passage) for the shipped
blend, the SQuAD reader and the fine-tuned one, alone and added to the blend at a weight chosen
per fold; and how well each reader's best score tells answerable questions from the rest (AUC,
and what a threshold chosen per fold declines at most 10% false declines). With `--final OUT`
the reader is also fine-tuned on every question and written as footnote ships it (its in-sample
figures are reported beside the cross-validated ones).

    python benchmarks/reader_in_domain.py ../shared/data/docqa-dev --home /tmp/docqa-home \\
        --start /tmp/reader-squad8.pt
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

import numpy as np
from evidence_model import Prepared, prepare, selection
from reader_blend import FOLDS, decline_rows, folds_by_group, selection_rows, sigmoid

from footnote.answer import evidence
from footnote.application import create_app
from footnote.config import Settings
from footnote.evaluation.docqa import CORPUS_FOLDER, load_doc_questions
from footnote.models.cpu import machine
from footnote.models.registry import REGISTRY, resolve_registered
from footnote.training.reader import BASE_MODEL, LICENCE
from footnote.training.reader_data import ReaderExample, squad_examples
from footnote.training.reader_export import export_reader
from footnote.training.reader_fit import FitParams, fit_reader, load_weights, save_weights, score_examples

RESULTS = Path(__file__).parent / "results"


def question_examples(prepared: Sequence[Prepared]) -> list[ReaderExample]:
    """Every question with every candidate the engine reads, labelled by whether it holds an answer."""
    return [
        ReaderExample(
            p.item.question,
            tuple(evidence.reader_candidates(p.hits, p.spans, p.texts)),
            tuple(int(x) for x in p.labels),
            p.group,
        )
        for p in prepared
    ]


def training_slice(
    example: ReaderExample, shipped: Sequence[float], cap: int, rng: random.Random
) -> ReaderExample:
    """At most `cap` candidates: every answering one, then the blend's best-scored others (the
    near misses the reader must learn to pass over), then others at random."""
    positive = [i for i, label in enumerate(example.labels) if label]
    others = sorted((i for i, label in enumerate(example.labels) if not label), key=lambda i: -shipped[i])
    hard = others[: cap // 2]
    rest = others[cap // 2 :]
    rng.shuffle(rest)
    kept = sorted((positive + hard + rest)[: max(cap, len(positive))])
    return ReaderExample(
        example.question,
        tuple(example.candidates[i] for i in kept),
        tuple(example.labels[i] for i in kept),
        example.group,
    )


def fine_tune(
    train: Sequence[ReaderExample], squad: Sequence[ReaderExample], base: Path, params: FitParams
) -> object:
    model, losses = fit_reader([*train, *squad], base, params)
    window = max(1, len(losses) // 10)
    print(
        f"  fine-tuned on {len(train)} + {len(squad)} questions, {len(losses)} steps, "
        f"loss {np.mean(losses[:window]):.3f} -> {np.mean(losses[-window:]):.3f}",
        flush=True,
    )
    return model


def figures(prepared: Sequence[Prepared], read: list[np.ndarray], count) -> dict[str, object]:
    best = np.array([sigmoid(r).max() if len(r) else 0.0 for r in read])
    coverage = np.array([p.answerability for p in prepared])
    return {
        "reader_alone": round(float(selection(prepared, lambda i: read[i], count)[:, 0].mean()), 4),
        "blend_plus_reader": selection_rows(prepared, lambda p: np.asarray(p.shipped), read, count),
        "declining": decline_rows(
            prepared, {"reader_best": best, "reader_best_times_answerability": best * coverage}
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--start", type=Path, required=True, help="the SQuAD-trained checkpoint (.pt)")
    parser.add_argument("--squad", type=Path, default=Path("../shared/data/squad2-dev/squad-v2.0.json"))
    parser.add_argument(
        "--squad-articles", nargs="*", default=[], help="SQuAD articles mixed into fine-tuning"
    )
    parser.add_argument("--squad-questions", type=int, default=0, help="how many of their questions")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--cap", type=int, default=16, help="candidates per training question")
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--learning-rate", type=float, default=3e-5)
    parser.add_argument(
        "--final", type=Path, help="also fine-tune on every question and write the reader here"
    )
    parser.add_argument("--save-scores", type=Path, help="write every question's logits here (JSON)")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()

    app = create_app(Settings(home=args.home))
    if not app.catalog.chunk_id_list():
        app.ingest([args.dataset / CORPUS_FOLDER])
    prepared = prepare(app, load_doc_questions(args.dataset), args.top_k)
    count = app.generator.count_tokens
    base = resolve_registered(REGISTRY[BASE_MODEL])
    examples = question_examples(prepared)
    rng = random.Random(5)
    sliced = [training_slice(e, p.shipped, args.cap, rng) for e, p in zip(examples, prepared, strict=True)]
    squad: list[ReaderExample] = []
    if args.squad_questions:
        pool = squad_examples(args.squad, articles=args.squad_articles or None)
        squad = random.Random(11).sample(pool, min(args.squad_questions, len(pool)))
    params = FitParams(epochs=args.epochs, learning_rate=args.learning_rate, start=str(args.start))

    started = time.monotonic()
    squad_reader = load_weights(base, args.start)
    before = [np.asarray(s) for s in score_examples(squad_reader, base, examples)]
    held: list[np.ndarray | None] = [None] * len(prepared)
    for number, fold in enumerate(folds_by_group(prepared, FOLDS)):
        inside = set(fold)
        print(f"fold {number + 1}/{FOLDS}: {len(fold)} questions held out", flush=True)
        model = fine_tune([e for i, e in enumerate(sliced) if i not in inside], squad, base, params)
        for i, scores in zip(fold, score_examples(model, base, [examples[i] for i in fold]), strict=True):
            held[i] = np.asarray(scores)
    report: dict[str, object] = {
        "dataset": str(args.dataset),
        "questions": len(prepared),
        "answerable": sum(p.item.answerable for p in prepared),
        "documents": len({p.group for p in prepared}),
        "start": str(args.start),
        "squad_mix": {"articles": args.squad_articles, "questions": len(squad)},
        "cap": args.cap,
        "params": asdict(params),
        "machine": machine(),
        "shipped_blend": round(
            float(selection(prepared, lambda i: prepared[i].shipped, count)[:, 0].mean()), 4
        ),
        "squad_reader": figures(prepared, before, count),
        "fine_tuned_per_fold": figures(prepared, [h for h in held if h is not None], count),
    }
    if args.save_scores:
        rows = {
            p.item.id: {"squad": b.tolist(), "fold": h.tolist() if h is not None else None}
            for p, b, h in zip(prepared, before, held, strict=True)
        }
        args.save_scores.write_text(json.dumps(rows), encoding="utf-8")
    if args.final:
        model = fine_tune(sliced, squad, base, params)
        report["fine_tuned_in_sample"] = figures(
            prepared, [np.asarray(s) for s in score_examples(model, base, examples)], count
        )
        save_weights(model, args.final.parent / f"{args.final.name}.pt")
        manifest = {"base": BASE_MODEL, "licence": LICENCE, "training": report}
        report["files"] = export_reader(model, base, args.final, manifest)["files"]
    report["seconds"] = round(time.monotonic() - started, 1)
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    name = f"reader_in_domain-{args.dataset.name}{'-' + args.tag if args.tag else ''}-{stamp}.json"
    (RESULTS / name).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k != "params"}, indent=2))
    print(f"saved {RESULTS / name}")


if __name__ == "__main__":
    main()
