"""Loaders: titles, blocks, heading paths, pages, exact spans and the errors users see."""

from __future__ import annotations

from pathlib import Path

import pytest

from footnote.core.cjk import count_words
from footnote.core.document import Document
from footnote.errors import LoaderError, UnsupportedFormatError
from footnote.ingest.loaders import SUPPORTED_SUFFIXES, LoadOptions, built_in_loaders, load_document
from tests.corpus import write_sample_pdf

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "sample"


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", newline="")
    else:
        path.write_bytes(content)
    return path


def assert_exact_spans(document: Document) -> None:
    document.check_spans()
    for block in document.blocks:
        assert document.text[block.start : block.end] == block.text
        assert block.text == block.text.rstrip(), f"block has trailing whitespace: {block.text!r}"
        assert block.text


def kinds_and_texts(document: Document) -> list[tuple[str, str]]:
    return [(block.kind, block.text) for block in document.blocks]


# --- dispatch -------------------------------------------------------------------------------


def test_the_supported_suffixes_are_those_of_every_loader_in_the_package() -> None:
    assert tuple(suffix for loader in built_in_loaders() for suffix in loader.suffixes) == SUPPORTED_SUFFIXES
    # Found, not listed: a loader dropped from the package would shorten this; a new one comes after.
    built_in = (".md", ".markdown", ".txt", ".text", ".html", ".htm", ".pdf", ".docx", ".gz")
    assert SUPPORTED_SUFFIXES[: len(built_in)] == built_in


def test_unsupported_suffix_names_the_supported_ones(tmp_path: Path) -> None:
    path = write(tmp_path, "notes.xyz", "hello")
    with pytest.raises(UnsupportedFormatError) as caught:
        load_document(path)
    assert caught.value.problem == f"unsupported file type '.xyz'; supported: {', '.join(SUPPORTED_SUFFIXES)}"
    assert str(path) in str(caught.value)


def test_suffix_match_ignores_case(tmp_path: Path) -> None:
    document = load_document(write(tmp_path, "README.MD", "# Hello\n\nWorld.\n"))
    assert document.format == "markdown"
    assert document.title == "Hello"


# --- plain text -----------------------------------------------------------------------------


def test_text_paragraphs_title_and_spans(tmp_path: Path) -> None:
    content = "Field Notes\r\n\r\nFirst paragraph,\r\nstill the first.\r\n\r\n\r\n  Second paragraph.  \r\n"
    document = load_document(write(tmp_path, "notes.txt", content))
    assert document.format == "text"
    assert document.path == str(tmp_path / "notes.txt")
    assert document.title == "Field Notes"
    assert "\r" not in document.text
    assert kinds_and_texts(document) == [
        ("paragraph", "Field Notes"),
        ("paragraph", "First paragraph,\nstill the first."),
        ("paragraph", "Second paragraph."),
    ]
    assert all(block.heading_path == () and block.page is None for block in document.blocks)
    assert_exact_spans(document)


MANUAL_PAGE = """\
TAR(1)                          GNU TAR Manual                          TAR(1)



NAME
       tar - an archiving utility

OPTIONS
   Informative output
       --checkpoint[=N]
              Display progress messages every Nth record (default 10).

RETURN VALUE
       2      Fatal  error.

TAR                              July 13, 2020                          TAR(1)
"""


def test_a_rendered_manual_page_has_its_sections_as_headings(tmp_path: Path) -> None:
    document = load_document(write(tmp_path, "tar.1.txt", MANUAL_PAGE))
    assert document.title == "tar - an archiving utility"
    blocks = [(block.kind, block.heading_path, block.text.split("\n")[0]) for block in document.blocks]
    assert blocks == [
        ("paragraph", (), MANUAL_PAGE.splitlines()[0]),
        ("heading", ("NAME",), "NAME"),
        ("paragraph", ("NAME",), "tar - an archiving utility"),
        ("heading", ("OPTIONS",), "OPTIONS"),
        ("heading", ("OPTIONS", "Informative output"), "Informative output"),
        ("paragraph", ("OPTIONS", "Informative output"), "--checkpoint[=N]"),
        ("heading", ("RETURN VALUE",), "RETURN VALUE"),
        ("paragraph", ("RETURN VALUE",), "2      Fatal  error."),
        ("paragraph", ("RETURN VALUE",), MANUAL_PAGE.splitlines()[-1]),
    ]
    assert_exact_spans(document)


def test_text_that_only_starts_like_a_manual_page_keeps_its_paragraphs(tmp_path: Path) -> None:
    content = "LS(1) is a command.\n\nNAME\n  ls\n"
    document = load_document(write(tmp_path, "notes.txt", content))
    assert [block.kind for block in document.blocks] == ["paragraph", "paragraph"]


def test_text_title_is_trimmed_to_120_characters(tmp_path: Path) -> None:
    document = load_document(write(tmp_path, "long.text", "word " * 100))
    assert len(document.title) <= 120
    assert document.title.startswith("word word")


def test_a_chinese_paragraph_on_the_first_line_gives_a_title_of_24_words(tmp_path: Path) -> None:
    paragraph = "灯塔在夜里为船只指明方向，菲涅耳透镜把灯光聚成一束，远处的水手也能看见。" * 3
    document = load_document(write(tmp_path, "灯塔.txt", paragraph + "\n\n第二段。\n"))
    # Each character a word, as an English title's words.
    assert paragraph.startswith(document.title) and count_words(document.title) == 24
    english = "The lighthouse keeper trimmed the wick at dusk and wound the clockwork."
    assert load_document(write(tmp_path, "keeper.txt", english + "\n")).title == english


def test_text_strips_utf8_bom(tmp_path: Path) -> None:
    document = load_document(write(tmp_path, "bom.txt", "\ufeffHello there.\n".encode()))
    assert document.text == "Hello there.\n"
    assert document.title == "Hello there."


@pytest.mark.parametrize("encoding", ["cp1252", "latin-1"])
def test_text_in_legacy_encodings_decodes(tmp_path: Path, encoding: str) -> None:
    sentence = "Le café où nous étions était très animé, près de la fenêtre. Déjà vu, naïve façade."
    document = load_document(write(tmp_path, "legacy.txt", (sentence + "\n").encode(encoding)))
    assert document.text.strip() == sentence
    assert_exact_spans(document)


def test_text_with_invalid_bytes_never_crashes(tmp_path: Path) -> None:
    document = load_document(write(tmp_path, "mixed.txt", b"Good start \xff\xfe\x81 then more words.\n"))
    assert document.text.startswith("Good start")
    assert document.text.rstrip().endswith("then more words.")


@pytest.mark.parametrize("content", [b"", b"   \n\n\t  \r\n"])
def test_empty_text_file_is_refused(tmp_path: Path, content: bytes) -> None:
    path = write(tmp_path, "empty.txt", content)
    with pytest.raises(LoaderError) as caught:
        load_document(path)
    assert caught.value.problem == "file is empty; nothing to index"
    assert caught.value.path == path


@pytest.mark.parametrize(
    "content",
    [b"PK\x03\x04\x00\x00binary zip header", bytes(range(1, 32)) * 20 + b"\x7f" * 50],
    ids=["nul-bytes", "control-characters"],
)
def test_binary_file_is_refused(tmp_path: Path, content: bytes) -> None:
    with pytest.raises(LoaderError) as caught:
        load_document(write(tmp_path, "image.txt", content))
    assert caught.value.problem == "looks like a binary file, not text; remove it or convert it to text first"


def test_missing_file_is_a_loader_error(tmp_path: Path) -> None:
    with pytest.raises(LoaderError, match="cannot read file"):
        load_document(tmp_path / "absent.txt")


# --- markdown -------------------------------------------------------------------------------

MARKDOWN = """\
# Field Guide

Intro paragraph
over two lines.

## Birds

- robin
- wren
  continued item

```python
# not a heading
x = 1
```

### Song

| name | call |
| ---- | ---- |
| wren | trill |

## Trees ##

~~~
## also not a heading
~~~

Oaks grow slowly. The record
1998. was a wet year, and this line continues the paragraph.
"""


def test_markdown_blocks_kinds_and_heading_paths(tmp_path: Path) -> None:
    document = load_document(write(tmp_path, "guide.md", MARKDOWN))
    assert document.format == "markdown"
    assert document.title == "Field Guide"
    assert document.text == MARKDOWN
    found = [(block.kind, block.heading_path, block.text.split("\n")[0]) for block in document.blocks]
    guide, birds, song, trees = "Field Guide", "Birds", "Song", "Trees"
    assert found == [
        ("heading", (guide,), "# Field Guide"),
        ("paragraph", (guide,), "Intro paragraph"),
        ("heading", (guide, birds), "## Birds"),
        ("list", (guide, birds), "- robin"),
        ("code", (guide, birds), "```python"),
        ("heading", (guide, birds, song), "### Song"),
        ("table", (guide, birds, song), "| name | call |"),
        ("heading", (guide, trees), "## Trees ##"),
        ("code", (guide, trees), "~~~"),
        ("paragraph", (guide, trees), "Oaks grow slowly. The record"),
    ]
    assert_exact_spans(document)


def test_markdown_code_and_list_blocks_are_kept_whole(tmp_path: Path) -> None:
    document = load_document(write(tmp_path, "guide.md", MARKDOWN))
    by_kind = {block.kind: block.text for block in document.blocks if block.kind in ("list", "table")}
    assert by_kind["list"] == "- robin\n- wren\n  continued item"
    assert by_kind["table"] == "| name | call |\n| ---- | ---- |\n| wren | trill |"
    code = [block.text for block in document.blocks if block.kind == "code"]
    assert code == ["```python\n# not a heading\nx = 1\n```", "~~~\n## also not a heading\n~~~"]


def test_markdown_setext_headings(tmp_path: Path) -> None:
    content = "Main Title\n==========\n\nText one.\n\nSub part\n--------\n\nText two.\n"
    document = load_document(write(tmp_path, "setext.markdown", content))
    assert document.title == "Main Title"
    assert [(block.kind, block.heading_path) for block in document.blocks] == [
        ("heading", ("Main Title",)),
        ("paragraph", ("Main Title",)),
        ("heading", ("Main Title", "Sub part")),
        ("paragraph", ("Main Title", "Sub part")),
    ]
    assert_exact_spans(document)


def test_markdown_title_from_front_matter_then_stem(tmp_path: Path) -> None:
    with_front_matter = '---\nsubtitle: no\ntitle: "Harbour Notes"\n---\n\n## Section\n\nBody text.\n'
    document = load_document(write(tmp_path, "a.md", with_front_matter))
    assert document.title == "Harbour Notes"
    assert [block.kind for block in document.blocks] == ["heading", "paragraph"]
    assert_exact_spans(document)
    assert load_document(write(tmp_path, "plain-notes.md", "Just a paragraph.\n")).title == "plain-notes"


def test_markdown_heading_title_drops_inline_markup(tmp_path: Path) -> None:
    document = load_document(write(tmp_path, "m.md", "# The *Fresnel* `lens` and [links](http://x)\n"))
    assert document.title == "The Fresnel lens and links"


def test_markdown_crlf_file_is_normalised(tmp_path: Path) -> None:
    document = load_document(write(tmp_path, "crlf.md", "# Title\r\n\r\nBody.\r\n"))
    assert document.text == "# Title\n\nBody.\n"
    assert_exact_spans(document)


def test_empty_markdown_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LoaderError, match="file is empty; nothing to index"):
        load_document(write(tmp_path, "empty.md", "\n\n"))


# --- HTML -----------------------------------------------------------------------------------

HTML = """<!DOCTYPE html>
<html><head><title>Tide  Notes</title>
<link rel="canonical" href="https://example.org/tides">
<style>p { color: red; }</style><script>var hidden = "script text";</script>
</head>
<body>
<nav><a href="/">Home</a> <a href="/x">Navigation link</a></nav>
<header>Site banner</header>
<div>Outside main, ignored.</div>
<main>
  <h1>Tides &amp; Moons</h1>
  <p>The   Moon&rsquo;s
     gravity pulls the sea.</p>
  <h2>Springs</h2>
  <p>Line one<br>Line two</p>
  <ul><li>First item</li><li>Second <b>bold</b> item</li></ul>
  <pre>  indented code
    more</pre>
  <table><tr><th>Place</th><th>Range</th></tr><tr><td>Fundy</td><td>16 m</td></tr></table>
  <form><label>Search</label><input name="q"></form>
  <noscript>Enable JavaScript</noscript>
</main>
<footer>Copyright footer</footer>
</body></html>
"""


def test_html_visible_main_text_as_blocks(tmp_path: Path) -> None:
    document = load_document(write(tmp_path, "tides.html", HTML))
    assert document.format == "html"
    assert document.title == "Tide Notes"
    assert document.url == "https://example.org/tides"
    assert kinds_and_texts(document) == [
        ("heading", "Tides & Moons"),
        ("paragraph", "The Moon’s gravity pulls the sea."),
        ("heading", "Springs"),
        ("paragraph", "Line one"),
        ("paragraph", "Line two"),
        ("list", "First item"),
        ("list", "Second bold item"),
        ("code", "  indented code\n    more"),
        ("table", "Place | Range\nFundy | 16 m"),
    ]
    assert document.text == "\n\n".join(block.text for block in document.blocks)
    for hidden in ("script text", "color", "Navigation", "banner", "Outside main", "Search", "footer"):
        assert hidden not in document.text
    assert_exact_spans(document)


def test_html_heading_paths(tmp_path: Path) -> None:
    document = load_document(write(tmp_path, "tides.htm", HTML))
    paths = {block.text: block.heading_path for block in document.blocks}
    assert paths["Tides & Moons"] == ("Tides & Moons",)
    assert paths["The Moon’s gravity pulls the sea."] == ("Tides & Moons",)
    assert paths["Springs"] == ("Tides & Moons", "Springs")
    assert paths["Place | Range\nFundy | 16 m"] == ("Tides & Moons", "Springs")


def test_html_without_main_uses_body_and_h1_title(tmp_path: Path) -> None:
    content = "<html><body><h1>Only Heading</h1><p>Body text here.</p><aside>Side</aside></body></html>"
    document = load_document(write(tmp_path, "page.html", content))
    assert document.title == "Only Heading"
    assert document.url is None
    assert kinds_and_texts(document) == [("heading", "Only Heading"), ("paragraph", "Body text here.")]
    assert_exact_spans(document)


def test_html_article_keeps_its_own_header(tmp_path: Path) -> None:
    content = (
        "<body><header>Site</header><article><header><h1>Post</h1></header>"
        "<p>Words.</p><footer>By me</footer></article></body>"
    )
    document = load_document(write(tmp_path, "post.html", content))
    assert [block.text for block in document.blocks] == ["Post", "Words.", "By me"]


def test_html_title_falls_back_to_stem(tmp_path: Path) -> None:
    document = load_document(write(tmp_path, "bare-page.html", "<p>No headings at all.</p>"))
    assert document.title == "bare-page"
    assert document.text == "No headings at all."


def test_html_head_without_closing_tag(tmp_path: Path) -> None:
    content = "<html><head><title>T</title><body><p>Visible.</p></body></html>"
    assert load_document(write(tmp_path, "open-head.html", content)).text == "Visible."


@pytest.mark.parametrize("declaration", ['<meta charset="windows-1252">', '<meta charset="iso-8859-1">'])
def test_html_meta_charset_is_honoured(tmp_path: Path, declaration: str) -> None:
    content = f"<html><head>{declaration}</head><body><p>Caf\xe9 \x93quoted\x94</p></body></html>"
    document = load_document(write(tmp_path, "legacy.html", content.encode("latin-1")))
    assert document.text == "Café “quoted”"


def test_html_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    document = load_document(write(tmp_path, "bad.html", b"<p>ok \xff bytes</p>"))
    assert document.text == "ok \ufffd bytes"


@pytest.mark.parametrize(
    "content",
    ["<html><head><title>Empty</title></head><body>  </body></html>", "<script>only()</script><nav>x</nav>"],
)
def test_html_without_visible_text_is_refused(tmp_path: Path, content: str) -> None:
    with pytest.raises(LoaderError) as caught:
        load_document(write(tmp_path, "empty.html", content))
    assert caught.value.problem == "HTML has no visible text in its body; nothing to index"


# --- PDF ------------------------------------------------------------------------------------

PDF_PAGES = [
    [
        "Shield volcanoes are broad and gently sloping. Mauna Loa in Hawaii is the largest one.",
        "Their lava is runny basalt that flows a long way before it cools.",
    ],
    ["Mount Vesuvius buried Pompeii in 79 AD under ash and pumice."],
    ["Volcanologists watch for small earthquakes and swelling ground."],
]


def test_pdf_pages_blocks_and_title(tmp_path: Path) -> None:
    path = write_sample_pdf(tmp_path / "volcanoes.pdf", PDF_PAGES, title="Volcano Notes")
    document = load_document(path)
    assert document.format == "pdf"
    assert document.title == "Volcano Notes"
    assert [(block.page, " ".join(block.text.split())) for block in document.blocks] == [
        (1, PDF_PAGES[0][0]),
        (1, PDF_PAGES[0][1]),
        (2, PDF_PAGES[1][0]),
        (3, PDF_PAGES[2][0]),
    ]
    assert document.text.count("\n\n") == 3  # between the pages and between page 1's paragraphs
    assert all(block.heading_path == () for block in document.blocks)
    assert_exact_spans(document)


def test_pdf_headings_come_from_the_outline(tmp_path: Path) -> None:
    path = write_sample_pdf(
        tmp_path / "sections.pdf", PDF_PAGES, sections=["Types of volcanoes", "Eruptions", None]
    )
    document = load_document(path)
    found = [(block.page, block.kind, block.heading_path) for block in document.blocks]
    assert found == [
        (1, "heading", ("Types of volcanoes",)),
        (1, "paragraph", ("Types of volcanoes",)),
        (1, "paragraph", ("Types of volcanoes",)),
        (2, "heading", ("Eruptions",)),
        (2, "paragraph", ("Eruptions",)),
        (3, "paragraph", ("Eruptions",)),
    ]
    assert document.title == "Types of volcanoes"  # no metadata title: the first line
    assert_exact_spans(document)


@pytest.mark.parametrize("metadata_title", [None, "Microsoft Word - report.docx", "draft.tex", "Untitled"])
def test_pdf_title_falls_back_to_the_first_line(tmp_path: Path, metadata_title: str | None) -> None:
    path = write_sample_pdf(tmp_path / "untitled.pdf", [["Opening line of text."]], title=metadata_title)
    assert load_document(path).title == "Opening line of text."


def test_encrypted_pdf_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = write_sample_pdf(tmp_path / "locked.pdf", PDF_PAGES, user_password="secret")
    with pytest.raises(LoaderError) as caught:
        load_document(path)
    assert caught.value.problem == (
        "PDF is password-protected; decrypt it first (e.g. qpdf --decrypt) and ingest again"
    )


def test_truncated_pdf_is_reported_as_corrupt(tmp_path: Path) -> None:
    whole = write_sample_pdf(tmp_path / "whole.pdf", PDF_PAGES).read_bytes()
    path = write(tmp_path, "truncated.pdf", whole[:300])
    with pytest.raises(LoaderError) as caught:
        load_document(path)
    assert caught.value.problem.startswith("PDF could not be read (")
    assert caught.value.problem.endswith(
        "); the file may be truncated or corrupt — re-export or re-download it"
    )


def test_pdf_without_text_layer_is_refused_when_ocr_is_off(tmp_path: Path) -> None:
    # With OCR on, scanned pages are read (tests/unit/test_pdf_ocr.py).
    path = write_sample_pdf(tmp_path / "scan.pdf", [[], []])
    with pytest.raises(LoaderError) as caught:
        load_document(path, LoadOptions(ocr="off"))
    assert caught.value.problem == "PDF has no text layer (scanned images?); run OCR first, e.g. ocrmypdf"


def test_empty_pdf_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LoaderError, match="file is empty"):
        load_document(write(tmp_path, "zero.pdf", b""))


# --- the shipped demo corpus ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "title", "fact"),
    [
        (
            "lighthouses.md",
            "How Lighthouses Work",
            "invented by the French physicist Augustin-Jean Fresnel in 1822",
        ),
        ("honeybees.txt", "Honeybees and the Waggle Dance", "Nobel Prize in Physiology or Medicine in 1973"),
        ("tides.html", "Why the Sea Has Tides", "The Bay of Fundy in eastern Canada has the highest tides"),
        (
            "volcanoes.pdf",
            "Volcanoes: Types and Eruptions",
            "Mount Vesuvius in Italy buried the Roman town of Pompeii",
        ),
    ],
)
def test_sample_corpus_loads_with_its_facts(name: str, title: str, fact: str) -> None:
    document = load_document(SAMPLE_DIR / name)
    assert document.title == title
    assert any(fact in " ".join(block.text.split()) for block in document.blocks)
    assert_exact_spans(document)


def test_sample_html_leaves_navigation_out() -> None:
    document = load_document(SAMPLE_DIR / "tides.html")
    assert "About us" not in document.text
    assert "newsletter" not in document.text
    assert document.url == "https://example.org/science/tides"


def test_sample_pdf_has_two_pages_with_outline_headings() -> None:
    document = load_document(SAMPLE_DIR / "volcanoes.pdf")
    assert {block.page for block in document.blocks} == {1, 2}
    assert {block.heading_path for block in document.blocks} == {("Types of volcanoes",), ("Eruptions",)}
    vesuvius = next(block for block in document.blocks if "Vesuvius" in block.text)
    assert vesuvius.page == 2
