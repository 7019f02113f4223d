"""How far the int8 reader strays from its float graph, for each way of quantizing it.

A trained reader checkpoint (`footnote train reader` keeps one beside `--out`) is exported to a
float ONNX graph and quantized several ways; each graph scores the same (question, candidate)
pairs: the technical questions' first candidates (`scripts/data/reader-questions.jsonl`) and,
with `--squad`, SQuAD sentences. Reported per way: the gap to the float graph's logits (mean,
p95, max), how often the best-scored candidate of a question changes, the file's size, and the
time to score one question's candidates (35, one thread).

    python benchmarks/reader_int8.py /tmp/reader.pt --questions 60
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

import numpy as np
from reader_blend import save_result

from footnote.models.cpu import machine
from footnote.models.registry import REGISTRY, resolve_registered
from footnote.models.sentence_reader import pair_arrays
from footnote.training import reader_export
from footnote.training.reader import BASE_MODEL
from footnote.training.reader_data import load_examples
from footnote.training.reader_fit import load_tokenizer, load_weights

RESULTS = Path(__file__).parent / "results"
QUESTIONS = Path(__file__).parent.parent / "scripts" / "data" / "reader-questions.jsonl"
TIMED_CANDIDATES = 35


def ways(graph: Path) -> dict[str, dict]:
    import onnx

    matmuls = [n.name for n in onnx.load(str(graph)).graph.node if n.op_type == "MatMul"]
    ffn_out = [n for n in matmuls if "/output/dense/" in n and "/attention/" not in n]
    ffn = ffn_out + [n for n in matmuls if "/intermediate/" in n]
    return {
        "every_layer": {},
        "reduce_range": {"reduce_range": True},
        "ffn_output_float": {"nodes_to_exclude": ffn_out},
        "ffn_float": {"nodes_to_exclude": ffn},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--questions", type=int, default=60, help="technical questions scored")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()

    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger().setLevel(logging.ERROR)
    base = resolve_registered(REGISTRY[BASE_MODEL])
    tokenizer = load_tokenizer(base)
    model = load_weights(base, args.checkpoint).eval()
    examples = load_examples(QUESTIONS)[: args.questions]

    def scores(session) -> list[np.ndarray]:
        found = []
        for e in examples:
            encoded = tokenizer.encode_batch([(e.question, c) for c in e.candidates])
            feeds = pair_arrays([x.ids for x in encoded], [x.type_ids for x in encoded])
            logits = session.run(None, feeds)[0]
            found.append(logits[:, 0] if logits.ndim == 2 else logits.reshape(-1))
        return found

    def timed(session) -> float:
        e = max(examples, key=lambda x: len(x.candidates))
        pairs = [(e.question, e.candidates[i % len(e.candidates)]) for i in range(TIMED_CANDIDATES)]
        encoded = tokenizer.encode_batch(pairs)
        feeds = pair_arrays([x.ids for x in encoded], [x.type_ids for x in encoded])
        session.run(None, feeds)
        runs = []
        for _ in range(5):
            started = time.perf_counter()
            session.run(None, feeds)
            runs.append(time.perf_counter() - started)
        return float(np.median(runs))

    def session(path: Path):
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    report: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as scratch:
        graph = Path(scratch) / "float.onnx"
        reader_export.export_float_graph(model, base, graph)
        reference = scores(session(graph))
        seconds = round(timed(session(graph)), 4)
        report["float"] = {"bytes": graph.stat().st_size, "seconds_per_question": seconds}
        for name, options in ways(graph).items():
            target = Path(scratch) / f"{name}.onnx"
            quantize_dynamic(graph, target, weight_type=QuantType.QInt8, per_channel=True, **options)
            quantized = session(target)
            got = scores(quantized)
            gaps = np.concatenate([np.abs(a - b) for a, b in zip(got, reference, strict=True)])
            moved = np.mean([np.argmax(a) != np.argmax(b) for a, b in zip(got, reference, strict=True)])
            report[name] = {
                "mean_gap": round(float(gaps.mean()), 4),
                "p95_gap": round(float(np.quantile(gaps, 0.95)), 4),
                "max_gap": round(float(gaps.max()), 4),
                "best_candidate_changed": round(float(moved), 4),
                "bytes": target.stat().st_size,
                "seconds_per_question": round(timed(quantized), 4),
            }
            print(name, report[name], flush=True)
    pairs = sum(len(e.candidates) for e in examples)
    out = {
        "checkpoint": str(args.checkpoint),
        "questions": len(examples),
        "pairs": pairs,
        "timed_candidates": TIMED_CANDIDATES,
        "ways": report,
        "machine": machine(),
    }
    save_result("reader_int8", args.tag, out)


if __name__ == "__main__":
    main()
