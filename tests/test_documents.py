"""Tests for the knowledge-base document loaders and the chunker."""

from __future__ import annotations

import http.server
import io
import json
import threading
import zipfile
from pathlib import Path

import pytest

from frontdesk.ir.models import KnowledgeSource
from frontdesk.runtime.retrieval.chunking import chunk_documents
from frontdesk.runtime.retrieval.documents import Chunk, Document
from frontdesk.runtime.retrieval.fetch import normalise_url
from frontdesk.runtime.retrieval.loaders import html_to_text
from frontdesk.runtime.retrieval.sources import load_source


def file_source(root: Path, relative: str, kind: str = "file") -> KnowledgeSource:
    return KnowledgeSource(location=relative, kind=kind, path=relative)


def load_one(root: Path, relative: str) -> Document:
    docs, problems = load_source(file_source(root, relative), root)
    assert problems == []
    assert len(docs) == 1
    return docs[0]


def make_pdf(text: str) -> bytes:
    """A minimal valid one-page PDF showing `text` in Helvetica, with a correct xref table."""
    stream = b"BT /F1 12 Tf 72 720 Td (" + text.encode("latin-1") + b") Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref_at = len(out)
    out += b"xref\n0 %d\n" % (len(objects) + 1)
    out += b"0000000000 65535 f \n"
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref_at)
    return bytes(out)


# ---------------------------------------------------------------------------
# Loaders by file type
# ---------------------------------------------------------------------------


def test_text_file_keeps_text_and_gets_title_from_name(tmp_path: Path) -> None:
    (tmp_path / "return_policy.txt").write_text("Returns are accepted within 30 days.\r\n\r\n\r\n\r\nKeep the receipt.\n")
    doc = load_one(tmp_path, "return_policy.txt")
    assert doc.text == "Returns are accepted within 30 days.\n\nKeep the receipt."
    assert doc.source == "return_policy.txt"
    assert doc.title == "return policy"


def test_markdown_keeps_headings_and_takes_title_from_first_heading(tmp_path: Path) -> None:
    (tmp_path / "help.md").write_text("# Help centre\n\n## Shipping\nWe ship **worldwide**.\n")
    doc = load_one(tmp_path, "help.md")
    assert doc.title == "Help centre"
    assert "## Shipping" in doc.text and "We ship **worldwide**." in doc.text


def test_csv_rows_become_labelled_lines(tmp_path: Path) -> None:
    (tmp_path / "branches.csv").write_text("city,hours,phone\nBerlin,9-17,\nParis,10-18,0123\n")
    doc = load_one(tmp_path, "branches.csv")
    lines = [line for line in doc.text.split("\n") if line]
    assert lines == ["city: Berlin; hours: 9-17", "city: Paris; hours: 10-18; phone: 0123"]


def test_csv_with_semicolons_is_sniffed(tmp_path: Path) -> None:
    (tmp_path / "fees.csv").write_text("service;fee\ntransfer;1 EUR\n")
    assert load_one(tmp_path, "fees.csv").text == "service: transfer; fee: 1 EUR"


def test_json_becomes_pretty_text(tmp_path: Path) -> None:
    (tmp_path / "hours.json").write_text('{"monday": "9-17", "sunday": null}')
    doc = load_one(tmp_path, "hours.json")
    assert json.loads(doc.text) == {"monday": "9-17", "sunday": None}
    assert '\n  "monday": "9-17"' in doc.text


def test_invalid_json_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"a": ')
    docs, problems = load_source(file_source(tmp_path, "bad.json"), tmp_path)
    assert docs == []
    assert len(problems) == 1 and "bad.json" in problems[0] and "invalid JSON" in problems[0]


def test_html_file_drops_scripts_and_navigation_and_keeps_lines(tmp_path: Path) -> None:
    html = """<html><head><title>Store help</title><style>p {color: red}</style></head>
    <body><nav><a href="/">Home</a> <a href="/x">Menu item</a></nav>
    <script>var secret = 1;</script>
    <h1>Returns</h1><p>You can return a book within <b>30 days</b> of delivery.</p>
    <ul><li>Keep the receipt</li><li>Use the label</li></ul>
    <h2>Shipping</h2><p>Free above 20 EUR.<br>Abroad: 5 EUR.</p></body></html>"""
    (tmp_path / "help.html").write_text(html)
    doc = load_one(tmp_path, "help.html")
    assert doc.title == "Store help"
    lines = [line for line in doc.text.split("\n") if line]
    assert lines == [
        "# Returns",
        "You can return a book within 30 days of delivery.",
        "- Keep the receipt",
        "- Use the label",
        "## Shipping",
        "Free above 20 EUR.",
        "Abroad: 5 EUR.",
    ]
    assert "secret" not in doc.text and "Menu item" not in doc.text and "color" not in doc.text


def test_html_heading_with_nested_block_does_not_crash() -> None:
    text, title = html_to_text("<h2><div>Opening <span>hours</span></div></h2><p>Nine to five.</p>")
    assert text == "## Opening hours\n\nNine to five."
    assert title == "Opening hours"


def test_docx_paragraphs_are_read(tmp_path: Path) -> None:
    ns = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    body = (
        f'<w:document xmlns:w="{ns}"><w:body>'
        "<w:p><w:r><w:t>Cards can be </w:t></w:r><w:r><w:t>blocked in the app.</w:t></w:r></w:p>"
        "<w:p><w:r><w:t>Call us 24/7.</w:t></w:r></w:p>"
        "</w:body></w:document>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("word/document.xml", body)
    (tmp_path / "cards.docx").write_bytes(buffer.getvalue())
    assert load_one(tmp_path, "cards.docx").text == "Cards can be blocked in the app.\n\nCall us 24/7."


def test_pdf_text_comes_out(tmp_path: Path) -> None:
    (tmp_path / "return_policy.pdf").write_bytes(make_pdf("Books may be returned within 30 days."))
    doc = load_one(tmp_path, "return_policy.pdf")
    assert "Books may be returned within 30 days." in doc.text
    assert doc.title == "return policy"


def test_corrupt_pdf_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf\x00\xff")
    docs, problems = load_source(file_source(tmp_path, "broken.pdf"), tmp_path)
    assert docs == []
    assert len(problems) == 1
    assert problems[0].startswith("could not read broken.pdf: the PDF is damaged or not a PDF")


def test_truncated_pdf_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "half.pdf").write_bytes(make_pdf("Hello there")[:60])
    docs, problems = load_source(file_source(tmp_path, "half.pdf"), tmp_path)
    assert docs == [] and len(problems) == 1 and "half.pdf" in problems[0]


def test_unsupported_type_is_skipped_with_a_hint(tmp_path: Path) -> None:
    (tmp_path / "data.xlsx").write_bytes(b"PK\x03\x04 binary")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    docs, problems = load_source(file_source(tmp_path, "data.xlsx"), tmp_path)
    assert docs == []
    assert problems == ["skipped data.xlsx: unsupported file type (spreadsheet; export it as .csv)"]
    docs, problems = load_source(file_source(tmp_path, "image.png"), tmp_path)
    assert problems[0].startswith("skipped image.png: unsupported file type (use .txt, .md, .csv, .pdf, .html")


def test_empty_file_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("  \n\n")
    docs, problems = load_source(file_source(tmp_path, "empty.txt"), tmp_path)
    assert docs == [] and problems == ["skipped empty.txt: the file has no text"]


# ---------------------------------------------------------------------------
# Files, folders, missing things
# ---------------------------------------------------------------------------


def test_directory_is_read_recursively_sorted_without_hidden_files(tmp_path: Path) -> None:
    docs_dir = tmp_path / "kb"
    (docs_dir / "b_cards").mkdir(parents=True)
    (docs_dir / "a_accounts").mkdir()
    (docs_dir / ".git").mkdir()
    (docs_dir / "b_cards" / "lost.txt").write_text("Block a lost card in the app.")
    (docs_dir / "a_accounts" / "open.md").write_text("Open an account online.")
    (docs_dir / "z.txt").write_text("Last one.")
    (docs_dir / ".secret.txt").write_text("hidden")
    (docs_dir / ".git" / "config.txt").write_text("hidden too")
    (docs_dir / "sheet.xlsx").write_bytes(b"PK")
    docs, problems = load_source(KnowledgeSource(location="kb", kind="directory", path="kb"), tmp_path)
    assert [d.source for d in docs] == ["kb/a_accounts/open.md", "kb/b_cards/lost.txt", "kb/z.txt"]
    assert problems == ["skipped kb/sheet.xlsx: unsupported file type (spreadsheet; export it as .csv)"]


def test_empty_directory_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "nothing").mkdir()
    docs, problems = load_source(KnowledgeSource(location="nothing/", kind="directory", path="nothing"), tmp_path)
    assert docs == [] and problems == ["found no readable documents in nothing/"]


def test_unresolved_source_is_reported_not_found(tmp_path: Path) -> None:
    docs, problems = load_source(KnowledgeSource(location="policy.pdf", kind="file"), tmp_path)
    assert docs == []
    assert len(problems) == 1 and problems[0].startswith("policy.pdf: not found")


def test_resolved_path_that_vanished_is_reported_not_found(tmp_path: Path) -> None:
    docs, problems = load_source(KnowledgeSource(location="gone.txt", kind="file", path="gone.txt"), tmp_path)
    assert docs == [] and len(problems) == 1 and "not found" in problems[0]


# ---------------------------------------------------------------------------
# Web pages
# ---------------------------------------------------------------------------

PAGE = b"""<!doctype html><html><head><title>Help centre</title>
<script>tracking()</script></head><body><nav>Home | Shop</nav>
<h1>Opening hours</h1><p>We are open from 9 to 5 on weekdays.</p></body></html>"""


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (stdlib name)
        if self.path == "/help":
            self._send(200, "text/html; charset=utf-8", PAGE)
        elif self.path == "/old-help":
            self.send_response(301)
            self.send_header("Location", "/help")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/notes.txt":
            self._send(200, "text/plain; charset=utf-8", "Plain notes.\n".encode())
        elif self.path == "/image":
            self._send(200, "image/png", b"\x89PNG....")
        else:
            self._send(404, "text/plain", b"no such page")

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:  # keep test output clean
        pass


@pytest.fixture
def web_server(monkeypatch: pytest.MonkeyPatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def url_source(url: str) -> KnowledgeSource:
    return KnowledgeSource(location=url, kind="url")


def test_url_html_page_is_fetched_and_cleaned(web_server: str, tmp_path: Path) -> None:
    docs, problems = load_source(url_source(f"{web_server}/help"), tmp_path)
    assert problems == []
    assert len(docs) == 1
    assert docs[0].source == f"{web_server}/help"
    assert docs[0].title == "Help centre"
    assert docs[0].text == "# Opening hours\n\nWe are open from 9 to 5 on weekdays."


def test_url_redirect_is_followed(web_server: str, tmp_path: Path) -> None:
    docs, problems = load_source(url_source(f"{web_server}/old-help"), tmp_path)
    assert problems == [] and "open from 9 to 5" in docs[0].text


def test_url_plain_text(web_server: str, tmp_path: Path) -> None:
    docs, problems = load_source(url_source(f"{web_server}/notes.txt"), tmp_path)
    assert problems == [] and docs[0].text == "Plain notes."


def test_url_http_error_is_a_problem(web_server: str, tmp_path: Path) -> None:
    docs, problems = load_source(url_source(f"{web_server}/missing"), tmp_path)
    assert docs == []
    assert problems == [f"could not fetch {web_server}/missing: the server answered 404 Not Found"]


def test_url_unsupported_content_type_is_a_problem(web_server: str, tmp_path: Path) -> None:
    docs, problems = load_source(url_source(f"{web_server}/image"), tmp_path)
    assert docs == [] and "unsupported content type image/png" in problems[0]


def test_unreachable_url_gives_a_clear_problem(tmp_path: Path) -> None:
    docs, problems = load_source(url_source("http://127.0.0.1:1/"), tmp_path, timeout=2.0)
    assert docs == []
    assert problems == ["could not fetch http://127.0.0.1:1/: connection refused (is the machine online?)"]


def test_url_fetching_can_be_turned_off(tmp_path: Path) -> None:
    docs, problems = load_source(url_source("www.example.com/help"), tmp_path, fetch_urls=False)
    assert docs == [] and problems == ["did not fetch www.example.com/help: fetching web pages is turned off"]


def test_url_without_scheme_gets_https() -> None:
    assert normalise_url("www.bookstore.com/help-center") == "https://www.bookstore.com/help-center"
    assert normalise_url("http://example.com") == "http://example.com"
    assert normalise_url("  HTTPS://Example.com/x ") == "HTTPS://Example.com/x"


def test_non_http_scheme_is_a_problem(tmp_path: Path) -> None:
    docs, problems = load_source(url_source("ftp://example.com/file.txt"), tmp_path)
    assert docs == [] and "only http:// and https://" in problems[0]


# ---------------------------------------------------------------------------
# Chunking
# ---------------------------------------------------------------------------


def words_of(text: str) -> set[str]:
    return set(text.split())


def test_small_paragraphs_merge_into_one_chunk() -> None:
    doc = Document(text="First paragraph.\n\nSecond paragraph.\n\nThird.", source="a.txt", title="a")
    chunks = chunk_documents([doc], max_chars=800)
    assert chunks == [Chunk(text="First paragraph.\n\nSecond paragraph.\n\nThird.", source="a.txt", title="a", index=0)]


def test_chunks_respect_the_bound_and_never_cut_words() -> None:
    sentences = [f"Sentence number {i} talks about topic{i} in some detail." for i in range(60)]
    paragraphs = [" ".join(sentences[i : i + 7]) for i in range(0, 60, 7)]
    text = "\n\n".join(paragraphs) + "\n\n" + " ".join(["longword"] * 150)
    doc = Document(text=text, source="long.txt", title="long")
    chunks = chunk_documents([doc], max_chars=200, overlap=40)
    assert len(chunks) > 10
    source_words = words_of(text)
    for chunk in chunks:
        assert 0 < len(chunk.text) <= 200
        assert words_of(chunk.text) <= source_words  # no cut words
    assert [c.index for c in chunks] == list(range(len(chunks)))
    # every sentence ends up somewhere
    joined = " ".join(" ".join(c.text.split()) for c in chunks)
    for sentence in sentences:
        assert sentence in joined


def test_continuing_chunks_overlap_the_previous_one() -> None:
    text = " ".join(f"Fact {i} is stated here." for i in range(40))
    chunks = chunk_documents([Document(text=text, source="f.txt", title="f")], max_chars=120, overlap=40)
    assert len(chunks) > 3
    for previous, current in zip(chunks, chunks[1:]):
        first_sentence = current.text.split(". ")[0] + "."
        assert first_sentence in previous.text  # starts with the end of the previous chunk


def test_no_overlap_when_asked() -> None:
    text = " ".join(f"Fact {i} is stated here." for i in range(40))
    chunks = chunk_documents([Document(text=text, source="f.txt", title="f")], max_chars=120, overlap=0)
    joined = " ".join(c.text for c in chunks)
    assert joined == text


def test_headings_start_new_chunks_and_stay_with_their_text() -> None:
    text = "# Returns\nReturn within 30 days.\n\n## Shipping\n\nWe ship worldwide.\n\n## Payment\nCards accepted."
    chunks = chunk_documents([Document(text=text, source="h.md", title="h")], max_chars=800)
    assert [c.text for c in chunks] == [
        "# Returns\nReturn within 30 days.",
        "## Shipping\n\nWe ship worldwide.",
        "## Payment\nCards accepted.",
    ]


def test_overlong_single_word_is_the_only_hard_cut() -> None:
    token = "x" * 250
    chunks = chunk_documents([Document(text=f"start {token} end", source="t", title="t")], max_chars=100, overlap=0)
    assert all(len(c.text) <= 100 for c in chunks)
    assert "".join(c.text for c in chunks).replace(" ", "") == f"start{token}end"


def test_chunk_indexes_count_per_document() -> None:
    docs = [
        Document(text="A. " * 100, source="a", title="a"),
        Document(text="B. " * 100, source="b", title="b"),
    ]
    chunks = chunk_documents(docs, max_chars=100, overlap=0)
    for source in ("a", "b"):
        indexes = [c.index for c in chunks if c.source == source]
        assert indexes == list(range(len(indexes))) and len(indexes) > 1
