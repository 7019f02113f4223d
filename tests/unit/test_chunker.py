"""The chunker: verbatim spans, token limits, overlap, and sections and pages kept apart."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from footnote.core.document import Block, Chunk, Document
from footnote.ingest.chunker import chunk_document
from footnote.ingest.loaders import load_document
from footnote.models.registry import resolve_embedder

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "sample"
SAMPLE_FILES = ["lighthouses.md", "honeybees.txt", "tides.html", "volcanoes.pdf"]


def words(text: str) -> int:
    return len(text.split())


def document_of(*parts: tuple[str, str, tuple[str, ...], int | None]) -> Document:
    """A document whose blocks are `(kind, text, heading_path, page)` joined by blank lines."""
    blocks: list[Block] = []
    offset = 0
    for kind, text, heading_path, page in parts:
        blocks.append(
            Block(text, offset, offset + len(text), kind=kind, heading_path=heading_path, page=page)
        )
        offset += len(text) + 2
    return Document(
        path="doc", format="text", title="Doc", text="\n\n".join(p[1] for p in parts), blocks=blocks
    )


def numbered_sentences(count: int, length: int = 9) -> str:
    """`count` distinct sentences of `length` words each, so overlaps can be located exactly."""
    return " ".join(" ".join(f"s{i}w{j}" for j in range(length - 1)) + f" s{i}end." for i in range(count))


def assert_well_formed(document: Document, chunks: list[Chunk], max_tokens: int) -> None:
    assert [chunk.ordinal for chunk in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert document.text[chunk.start : chunk.end] == chunk.text
        assert chunk.text == chunk.text.strip()
        assert chunk.token_count == words(chunk.text)
        assert chunk.token_count <= max_tokens


def blocks_in(document: Document, chunk: Chunk) -> list[Block]:
    return [block for block in document.blocks if block.start < chunk.end and block.end > chunk.start]


def test_empty_document_has_no_chunks() -> None:
    assert chunk_document(Document(path="e", format="text", title="E", text=""), words) == []


def test_small_blocks_of_one_section_are_packed_verbatim() -> None:
    document = document_of(
        ("heading", "# Birds", ("Birds",), None),
        ("paragraph", "Robins sing at dawn.", ("Birds",), None),
        ("paragraph", "Wrens are small.", ("Birds",), None),
    )
    chunks = chunk_document(document, words, max_tokens=50)
    assert len(chunks) == 1
    assert chunks[0].text == document.text
    assert chunks[0].heading_path == ("Birds",)
    assert_well_formed(document, chunks, 50)


def test_packing_stops_at_max_tokens() -> None:
    document = document_of(*[("paragraph", f"Paragraph {i} has five words.", (), None) for i in range(10)])
    chunks = chunk_document(document, words, max_tokens=12, overlap_tokens=0)
    assert [len(blocks_in(document, chunk)) for chunk in chunks] == [2] * 5
    assert_well_formed(document, chunks, 12)


def test_new_section_starts_a_new_chunk() -> None:
    document = document_of(
        ("heading", "# Guide", ("Guide",), None),
        ("paragraph", "Intro words.", ("Guide",), None),
        ("heading", "## Trees", ("Guide", "Trees"), None),
        ("paragraph", "Oaks grow slowly.", ("Guide", "Trees"), None),
        ("heading", "## Birds", ("Guide", "Birds"), None),
        ("heading", "### Song", ("Guide", "Birds", "Song"), None),
        ("paragraph", "Wrens trill.", ("Guide", "Birds", "Song"), None),
    )
    chunks = chunk_document(document, words, max_tokens=100)
    assert [chunk.text for chunk in chunks] == [
        "# Guide\n\nIntro words.",
        "## Trees\n\nOaks grow slowly.",
        "## Birds\n\n### Song\n\nWrens trill.",
    ]
    assert [chunk.heading_path for chunk in chunks] == [
        ("Guide",),
        ("Guide", "Trees"),
        ("Guide", "Birds", "Song"),
    ]
    assert_well_formed(document, chunks, 100)


def test_chunks_never_cross_pages() -> None:
    document = document_of(
        ("paragraph", "Page one first.", (), 1),
        ("paragraph", "Page one second.", (), 1),
        ("paragraph", "Page two only.", (), 2),
        ("paragraph", "Page three only.", (), 3),
    )
    chunks = chunk_document(document, words, max_tokens=100)
    assert [(chunk.page, chunk.text) for chunk in chunks] == [
        (1, "Page one first.\n\nPage one second."),
        (2, "Page two only."),
        (3, "Page three only."),
    ]


def test_large_block_splits_at_sentences_with_overlap() -> None:
    text = numbered_sentences(12)  # 108 words
    document = document_of(("paragraph", text, ("Section",), None))
    chunks = chunk_document(document, words, max_tokens=40, overlap_tokens=10)
    assert len(chunks) > 2
    assert_well_formed(document, chunks, 40)
    assert all(chunk.text.endswith(".") for chunk in chunks)  # whole sentences fit, so cuts are at sentences
    for previous, following in itertools.pairwise(chunks):
        assert following.start < previous.end, "consecutive pieces of a split block overlap"
        overlap = document.text[following.start : previous.end]
        assert 1 <= words(overlap) <= 10
        assert previous.text.endswith(overlap)
        assert following.start == 0 or document.text[following.start - 1] == " "  # starts at a word
    assert chunks[0].start == 0 and chunks[-1].end == len(text)
    assert all(chunk.heading_path == ("Section",) for chunk in chunks)


def test_overlap_roughly_matches_overlap_tokens() -> None:
    document = document_of(("paragraph", numbered_sentences(40, length=5), (), None))
    chunks = chunk_document(document, words, max_tokens=30, overlap_tokens=8)
    overlaps = [words(document.text[b.start : a.end]) for a, b in itertools.pairwise(chunks)]
    assert overlaps and all(4 <= size <= 8 for size in overlaps)


def test_zero_overlap_gives_disjoint_pieces() -> None:
    document = document_of(("paragraph", numbered_sentences(12), (), None))
    chunks = chunk_document(document, words, max_tokens=40, overlap_tokens=0)
    assert all(b.start >= a.end for a, b in itertools.pairwise(chunks))
    assert " ".join(chunk.text for chunk in chunks) == document.text


def test_overlong_sentence_splits_at_words() -> None:
    sentence = " ".join(f"word{i}" for i in range(95)) + "."
    document = document_of(("paragraph", sentence, (), None))
    chunks = chunk_document(document, words, max_tokens=20, overlap_tokens=5)
    assert len(chunks) >= 5
    assert_well_formed(document, chunks, 20)
    assert chunks[-1].text.endswith("word94.")


def test_unbreakable_word_is_its_own_oversized_chunk() -> None:
    giant = "x" * 50
    document = document_of(("paragraph", f"Short start. {giant} short end.", (), None))
    chunks = chunk_document(document, lambda s: len(s) // 10, max_tokens=3, overlap_tokens=0)
    assert giant in [chunk.text for chunk in chunks]
    assert all(document.text[c.start : c.end] == c.text for c in chunks)


def test_heading_joins_the_first_piece_of_a_large_block() -> None:
    document = document_of(
        ("heading", "## Long part", ("Long part",), None),
        ("paragraph", numbered_sentences(10), ("Long part",), None),
    )
    chunks = chunk_document(document, words, max_tokens=40, overlap_tokens=5)
    assert chunks[0].text.startswith("## Long part\n\ns0w0")
    assert_well_formed(document, chunks, 40)


def test_short_paragraph_joins_the_first_piece_of_a_large_block() -> None:
    # A text file's title line is a paragraph of its own: it starts the first chunk, not a scrap chunk.
    document = document_of(
        ("paragraph", "A title line", (), None),
        ("paragraph", numbered_sentences(10), (), None),
    )
    chunks = chunk_document(document, words, max_tokens=40, overlap_tokens=0)
    assert chunks[0].text.startswith("A title line\n\ns0w0")
    assert_well_formed(document, chunks, 40)
    assert " ".join(chunk.text for chunk in chunks).split() == document.text.split()


def test_split_pieces_are_balanced_not_full_then_scrap() -> None:
    document = document_of(("paragraph", numbered_sentences(12), (), None))  # 108 words
    chunks = chunk_document(document, words, max_tokens=100, overlap_tokens=0)
    assert [chunk.token_count for chunk in chunks] == [54, 54]
    chunks = chunk_document(document, words, max_tokens=40, overlap_tokens=0)
    assert [chunk.token_count for chunk in chunks] == [36, 36, 36]
    assert_well_formed(document, chunks, 40)


def test_tokenizer_with_special_tokens_stays_within_limit() -> None:
    def with_specials(text: str) -> int:
        return len(text.split()) + 2  # like [CLS] ... [SEP]

    document = document_of(*[("paragraph", numbered_sentences(1), (), None) for _ in range(12)])
    chunks = chunk_document(document, with_specials, max_tokens=40, overlap_tokens=8)
    assert all(chunk.token_count == with_specials(chunk.text) for chunk in chunks)
    # Four 9-word paragraphs fit in 40 only if the overhead is counted once per chunk, not per block.
    assert [chunk.token_count for chunk in chunks] == [38, 38, 38]


def test_undercounting_sums_are_corrected() -> None:
    # Counting "a b" as more than "a" plus "b" makes summed estimates too low; the final count catches it.
    def joined_costs_more(text: str) -> int:
        return len(text.split()) + text.count(" ")

    document = document_of(*[("paragraph", "alpha beta gamma delta.", (), None) for _ in range(8)])
    chunks = chunk_document(document, joined_costs_more, max_tokens=12, overlap_tokens=0)
    assert all(joined_costs_more(chunk.text) <= 12 for chunk in chunks)
    assert all(document.text[c.start : c.end] == c.text for c in chunks)


def test_token_counting_is_linear_in_document_size() -> None:
    counted = 0

    def counting(text: str) -> int:
        nonlocal counted
        counted += len(text)
        return len(text.split())

    document = document_of(("paragraph", numbered_sentences(2000), (), None))  # 18,000 words in one block
    chunks = chunk_document(document, counting, max_tokens=200, overlap_tokens=40)
    assert len(chunks) > 90
    assert counted < 6 * len(document.text)


def test_cjk_sentences_split_at_full_stops() -> None:
    text = "。".join(["潮汐由月球引力引起"] * 10) + "。"
    document = document_of(("paragraph", text, (), None))
    chunks = chunk_document(document, len, max_tokens=25, overlap_tokens=0)
    assert len(chunks) > 1
    assert all(chunk.text.endswith("。") and len(chunk.text) <= 25 for chunk in chunks)


def test_document_without_blocks_is_chunked_as_one_paragraph() -> None:
    document = Document(path="d", format="text", title="D", text="  One. Two three.  ")
    chunks = chunk_document(document, words)
    assert [(chunk.text, chunk.start) for chunk in chunks] == [("One. Two three.", 2)]


@pytest.mark.parametrize(("max_tokens", "overlap_tokens"), [(0, 0), (10, -1)])
def test_invalid_limits_are_rejected(max_tokens: int, overlap_tokens: int) -> None:
    with pytest.raises(ValueError):
        chunk_document(document_of(("paragraph", "text", (), None)), words, max_tokens, overlap_tokens)


@pytest.mark.parametrize("name", SAMPLE_FILES)
@pytest.mark.parametrize("max_tokens", [15, 60, 200])
def test_sample_corpus_chunks_are_verbatim_and_bounded(name: str, max_tokens: int) -> None:
    document = load_document(SAMPLE_DIR / name)
    chunks = chunk_document(document, words, max_tokens=max_tokens, overlap_tokens=max_tokens // 5)
    assert chunks
    assert_well_formed(document, chunks, max_tokens)
    for chunk in chunks:
        inside = blocks_in(document, chunk)
        assert len({block.page for block in inside}) == 1
        content_paths = {block.heading_path for block in inside if block.kind != "heading"}
        assert len(content_paths) <= 1
        assert chunk.heading_path == (content_paths.pop() if content_paths else inside[0].heading_path)
        assert chunk.page == inside[0].page
    covered = "".join(chunk.text for chunk in chunks)
    for block in document.blocks:
        for word in block.text.split():
            assert word in covered


def test_sample_fact_is_stated_within_one_chunk() -> None:
    document = load_document(SAMPLE_DIR / "lighthouses.md")
    chunks = chunk_document(document, words, max_tokens=200)
    fact = "The Fresnel lens was invented by the French physicist Augustin-Jean Fresnel in 1822."
    holder = next(chunk for chunk in chunks if fact in " ".join(chunk.text.split()))
    assert holder.heading_path == ("How Lighthouses Work", "The Fresnel lens")


@pytest.fixture(scope="module")
def minilm_tokenizer() -> Tokenizer:
    """The bundled MiniLM's own tokenizer, counting as the embedder does (no truncation)."""
    tokenizer = Tokenizer.from_file(str(Path(resolve_embedder("minilm-l6", verify=False)) / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


MIXED_TEXT = (
    "Ünïcödé accents, e-mail@example.org and 1,234.5 mg/kg (p<0.05) were reported. "
    "Hyperphosphorylation-induced neurodegeneration was not observed!  Why?\n"
    "潮汐由月球引力引起。咖啡起源于埃塞俄比亚，后来传到也门。 "
    + " ".join(f"Sentence {i} mentions antidisestablishmentarianism and TNF-α signalling." for i in range(40))
)


@pytest.mark.parametrize("source", [*SAMPLE_FILES, "mixed"])
@pytest.mark.parametrize(("max_tokens", "overlap_tokens"), [(200, 20), (60, 0), (30, 10)])
def test_offsets_give_the_chunks_that_counting_each_piece_gives(
    minilm_tokenizer: Tokenizer, source: str, max_tokens: int, overlap_tokens: int
) -> None:
    # Costing pieces by the tokens inside them is a shortcut: it must cut where tokenizing
    # every piece again would, with a real tokenizer on real text.
    if source == "mixed":
        document = Document(path="mixed", format="text", title="Mixed", text=MIXED_TEXT)
    else:
        document = load_document(SAMPLE_DIR / source)

    def count(text: str) -> int:
        return len(minilm_tokenizer.encode(text).ids)

    offsets = minilm_tokenizer.encode(document.text, add_special_tokens=False).offsets
    counted = chunk_document(document, count, max_tokens, overlap_tokens)
    by_offsets = chunk_document(document, count, max_tokens, overlap_tokens, offsets)
    assert len(counted) > 1
    assert by_offsets == counted
    assert all(count(chunk.text) <= max_tokens for chunk in by_offsets)
