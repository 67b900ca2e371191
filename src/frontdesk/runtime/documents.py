"""Loading the documents behind a `kb agent` (files, folders, web pages) and cutting them into chunks."""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from xml.etree import ElementTree

from frontdesk.ir.models import KnowledgeSource

# Files bigger than this are skipped with a problem instead of being read into memory.
MAX_FILE_BYTES = 20 * 1024 * 1024
# Web pages bigger than this are cut off with a problem.
MAX_DOWNLOAD_BYTES = 10 * 1024 * 1024

SUPPORTED_HINT = "use .txt, .md, .csv, .pdf, .html, .json or .docx"
_USER_AGENT = "frontdesk-kb/0.1 (+knowledge-base loader)"


@dataclass
class Document:
    """The text of one file or web page; `source` is the path (relative to the root) or the URL."""

    text: str
    source: str
    title: str


@dataclass
class Chunk:
    """A piece of a document small enough to retrieve and show to a model; `index` counts within the document."""

    text: str
    source: str
    title: str
    index: int


class _LoadProblem(Exception):
    """A file that cannot be turned into text; the message is a sentence for the author."""


# ---------------------------------------------------------------------------
# Text helpers
# ---------------------------------------------------------------------------


def _decode(data: bytes) -> str:
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def _tidy(text: str) -> str:
    """Normalise line endings, strip trailing spaces, and squeeze runs of blank lines to one."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    lines = [line.rstrip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def _title_from_name(name: str) -> str:
    stem = Path(name).stem if "." in name else name
    words = re.sub(r"[_\-]+", " ", stem).strip()
    return words or name


def _first_markdown_heading(text: str) -> str | None:
    match = re.search(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", text, flags=re.MULTILINE)
    return match.group(1).strip() if match else None


# ---------------------------------------------------------------------------
# Loaders: bytes of one file -> (text, title or None)
# ---------------------------------------------------------------------------


def _load_plain(data: bytes, name: str) -> tuple[str, str | None]:
    return _tidy(_decode(data)), None


_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE_CELL = re.compile(r"^\s*:?-+:?\s*$")


def _compact_table_row(line: str) -> str:
    """A Markdown table row without its alignment padding: `| Standard     | 4 to 7 |` -> `| Standard | 4 to 7 |`.

    The padding is typing, not text: it would take a table's share of a chunk and of the
    embedding model's input while saying nothing.
    """
    cells = line.strip()[1:-1].split("|")
    if all(_TABLE_RULE_CELL.match(cell) for cell in cells):
        return "|" + "|".join("---" for _ in cells) + "|"
    return "| " + " | ".join(" ".join(cell.split()) for cell in cells) + " |"


def _load_markdown(data: bytes, name: str) -> tuple[str, str | None]:
    lines = _decode(data).split("\n")
    text = _tidy("\n".join(_compact_table_row(line) if _TABLE_ROW.match(line) else line for line in lines))
    return text, _first_markdown_heading(text)


def _load_csv(data: bytes, name: str) -> tuple[str, str | None]:
    text = _decode(data).replace("\r\n", "\n").replace("\r", "\n")
    sample = text[:4096]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if name.lower().endswith(".tsv") else csv.excel
    try:
        rows = [row for row in csv.reader(io.StringIO(text), dialect) if any(c.strip() for c in row)]
    except csv.Error as error:
        raise _LoadProblem(f"could not read {name}: the CSV is malformed ({error})") from None
    if not rows:
        return "", None
    header = [h.strip() for h in rows[0]]
    lines: list[str] = []
    for row in rows[1:]:
        fields = []
        for position, value in enumerate(row):
            value = " ".join(value.split())
            if not value:
                continue
            column = header[position] if position < len(header) and header[position] else f"column {position + 1}"
            fields.append(f"{column}: {value}")
        if fields:
            lines.append("; ".join(fields))
    if not lines:  # a header-only file still says something
        lines = ["; ".join(h for h in header if h)]
    # One row per paragraph, so the chunker keeps rows whole and packs several per chunk.
    return "\n\n".join(lines), None


def _load_json(data: bytes, name: str) -> tuple[str, str | None]:
    try:
        value = json.loads(_decode(data))
    except json.JSONDecodeError as error:
        raise _LoadProblem(
            f"could not read {name}: invalid JSON at line {error.lineno}, column {error.colno} ({error.msg})"
        ) from None
    return json.dumps(value, indent=2, ensure_ascii=False), None


def _load_pdf(data: bytes, name: str) -> tuple[str, str | None]:
    from pypdf import PdfReader

    pypdf_logger = logging.getLogger("pypdf")
    previous_level = pypdf_logger.level
    pypdf_logger.setLevel(logging.ERROR)  # damaged-file warnings become our own problem sentence
    try:
        try:
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                try:
                    unlocked = reader.decrypt("")
                except Exception:
                    unlocked = 0
                if not unlocked:
                    raise _LoadProblem(f"could not read {name}: the PDF is password-protected")
            pages = []
            for page in reader.pages:
                pages.append(_tidy(page.extract_text() or ""))
            title = None
            try:
                if reader.metadata and reader.metadata.title:
                    title = str(reader.metadata.title).strip() or None
            except Exception:
                title = None
        except _LoadProblem:
            raise
        except Exception as error:  # pypdf raises many kinds of errors for damaged files
            detail = str(error).strip() or type(error).__name__
            raise _LoadProblem(f"could not read {name}: the PDF is damaged or not a PDF ({detail})") from None
    finally:
        pypdf_logger.setLevel(previous_level)
    text = "\n\n".join(p for p in pages if p)
    if not text.strip():
        raise _LoadProblem(f"skipped {name}: the PDF has no extractable text (is it a scanned image?)")
    return text, title


_DROPPED_HTML_TAGS = ("script", "style", "nav", "noscript", "template", "svg", "iframe", "head")
_BLOCK_HTML_TAGS = (
    "p", "div", "section", "article", "main", "aside", "header", "footer", "blockquote", "pre",
    "table", "tr", "ul", "ol", "dl", "dt", "dd", "li", "figure", "figcaption", "form", "address",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr",
)  # fmt: skip


_HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def html_to_text(html: str | bytes) -> tuple[str, str | None]:
    """Readable text of an HTML page (headings as `#` lines, one paragraph per block) and its title."""
    from bs4 import BeautifulSoup

    with warnings.catch_warnings():  # e.g. "looks like a URL": a page that only holds a link is fine
        warnings.simplefilter("ignore")
        soup = BeautifulSoup(html, "html.parser")
    title = None
    if soup.title and soup.title.get_text(strip=True):
        title = " ".join(soup.title.get_text().split())
    for tag in soup.find_all(_DROPPED_HTML_TAGS):
        tag.decompose()
    for br in soup.find_all("br"):
        br.replace_with("\n")
    for tag in soup.find_all(["td", "th"]):
        tag.insert_after(" | ")
    for tag in soup.find_all(_BLOCK_HTML_TAGS):
        if tag.find_parent(_HEADING_TAGS) is not None:  # already part of a heading's text
            continue
        if tag.name in _HEADING_TAGS:
            level = int(tag.name[1:])
            heading = " ".join(tag.get_text(" ").split())
            tag.replace_with(f"\n\n{'#' * level} {heading}\n\n" if heading else "\n\n")
            continue
        if tag.name == "li":
            tag.insert_before("\n- ")
            tag.insert_after("\n")
        elif tag.name in ("tr", "dt", "dd"):
            tag.insert_before("\n")
            tag.insert_after("\n")
        else:
            tag.insert_before("\n\n")
            tag.insert_after("\n\n")
    raw = soup.get_text()
    lines = []
    for line in raw.split("\n"):
        line = " ".join(line.split()).strip(" |")
        lines.append(line)
    text = _tidy("\n".join(lines))
    if title is None:
        title = _first_markdown_heading(text)
    return text, title


def _load_html(data: bytes, name: str) -> tuple[str, str | None]:
    return html_to_text(_decode(data))


_WORD_NS = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _load_docx(data: bytes, name: str) -> tuple[str, str | None]:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            root = ElementTree.fromstring(archive.read("word/document.xml"))
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError) as error:
        raise _LoadProblem(f"could not read {name}: the Word file is damaged ({error})") from None
    paragraphs = []
    for paragraph in root.iter(f"{_WORD_NS}p"):
        pieces = []
        for node in paragraph.iter():
            if node.tag == f"{_WORD_NS}t" and node.text:
                pieces.append(node.text)
            elif node.tag == f"{_WORD_NS}tab":
                pieces.append(" ")
        line = "".join(pieces).strip()
        if line:
            paragraphs.append(line)
    return "\n\n".join(paragraphs), None


_LOADERS: dict[str, Callable[[bytes, str], tuple[str, str | None]]] = {
    ".txt": _load_plain,
    ".text": _load_plain,
    ".md": _load_markdown,
    ".markdown": _load_markdown,
    ".csv": _load_csv,
    ".tsv": _load_csv,
    ".json": _load_json,
    ".pdf": _load_pdf,
    ".html": _load_html,
    ".htm": _load_html,
    ".docx": _load_docx,
}

_SPECIFIC_HINTS = {
    ".doc": "old Word format; save it as .docx or .pdf",
    ".xls": "spreadsheet; export it as .csv",
    ".xlsx": "spreadsheet; export it as .csv",
    ".ppt": "slides; export them as .pdf",
    ".pptx": "slides; export them as .pdf",
}


def _looks_like_text(data: bytes) -> bool:
    if b"\x00" in data[:8192]:
        return False
    try:
        data[:8192].decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start > 8180  # a multi-byte character cut at the sample's end
    return True


def _load_file(path: Path, display: str) -> tuple[list[Document], list[str]]:
    name = path.name
    suffix = path.suffix.lower()
    loader = _LOADERS.get(suffix)
    if loader is None and suffix == "":
        loader = _load_plain  # README, LICENSE...: read when they are text
    if loader is None:
        hint = _SPECIFIC_HINTS.get(suffix, SUPPORTED_HINT)
        return [], [f"skipped {display}: unsupported file type ({hint})"]
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return [], [f"skipped {display}: the file is too large ({size // (1024 * 1024)} MB)"]
        data = path.read_bytes()
    except OSError as error:
        return [], [f"could not read {display}: {error.strerror or error}"]
    if suffix == "" and not _looks_like_text(data):
        return [], [f"skipped {display}: not a text file ({SUPPORTED_HINT})"]
    try:
        text, title = loader(data, display)
    except _LoadProblem as problem:
        return [], [str(problem)]
    if not text.strip():
        return [], [f"skipped {display}: the file has no text"]
    return [Document(text=text, source=display, title=title or _title_from_name(name))], []


def _display_path(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _load_directory(directory: Path, root: Path, location: str) -> tuple[list[Document], list[str]]:
    documents: list[Document] = []
    problems: list[str] = []
    files: list[Path] = []
    for current, folders, names in os.walk(directory, followlinks=False):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        files.extend(Path(current) / n for n in names if not n.startswith("."))
    for path in sorted(files, key=lambda p: p.relative_to(directory).as_posix()):
        if not path.is_file():
            continue
        found, trouble = _load_file(path, _display_path(path, root))
        documents.extend(found)
        problems.extend(trouble)
    if not documents:
        problems.append(f"found no readable documents in {location}")
    return documents, problems


# ---------------------------------------------------------------------------
# Web pages
# ---------------------------------------------------------------------------


def normalise_url(location: str) -> str:
    """`www.example.com/help` -> `https://www.example.com/help`; URLs with a scheme are kept."""
    location = location.strip()
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.\-]*://", location):
        return location
    if location.startswith("//"):
        return "https:" + location
    return "https://" + location


def _connect_reason(error: Exception) -> str:
    text = str(error)
    lowered = text.lower()
    if "refused" in lowered:
        return "connection refused"
    if any(s in lowered for s in ("name or service not known", "nodename nor servname", "name resolution", "getaddrinfo")):
        return "the host name could not be resolved"
    if "unreachable" in lowered:
        return "the network is unreachable"
    return text or type(error).__name__


def _load_url(location: str, timeout: float) -> tuple[list[Document], list[str]]:
    import httpx

    url = normalise_url(location)
    if not url.lower().startswith(("http://", "https://")):
        return [], [f"could not fetch {location}: only http:// and https:// addresses are supported"]
    try:
        with httpx.Client(
            follow_redirects=True, timeout=timeout, headers={"User-Agent": _USER_AGENT}
        ) as client:
            with client.stream("GET", url) as response:
                if response.status_code >= 400:
                    phrase = response.reason_phrase or ""
                    return [], [f"could not fetch {url}: the server answered {response.status_code} {phrase}".rstrip()]
                body = bytearray()
                truncated = False
                for piece in response.iter_bytes():
                    body.extend(piece)
                    if len(body) > MAX_DOWNLOAD_BYTES:
                        truncated = True
                        break
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                charset = response.charset_encoding
                final_url = str(response.url)
    except httpx.TimeoutException:
        return [], [f"could not fetch {url}: no answer within {timeout:g} seconds (is the machine online?)"]
    except httpx.ConnectError as error:
        return [], [f"could not fetch {url}: {_connect_reason(error)} (is the machine online?)"]
    except httpx.TooManyRedirects:
        return [], [f"could not fetch {url}: too many redirects"]
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as error:
        return [], [f"could not fetch {location}: not a valid web address ({error})"]
    except httpx.HTTPError as error:
        return [], [f"could not fetch {url}: {error or type(error).__name__}"]
    except Exception as error:  # anything odd in the network stack is a problem, not a crash
        return [], [f"could not fetch {url}: {error or type(error).__name__}"]

    problems = []
    if truncated:
        problems.append(f"{url} is larger than {MAX_DOWNLOAD_BYTES // (1024 * 1024)} MB; only the start was read")
    data = bytes(body)
    path_suffix = Path(final_url.split("?")[0].split("#")[0]).suffix.lower()
    if content_type in ("text/html", "application/xhtml+xml") or (not content_type and path_suffix in (".html", ".htm", "")):
        loader = _load_html
    elif content_type == "application/pdf" or path_suffix == ".pdf":
        loader = _load_pdf
    elif content_type in ("application/json",) or content_type.endswith("+json"):
        loader = _load_json
    elif content_type in ("text/csv", "text/tab-separated-values"):
        loader = _load_csv
    elif content_type in ("text/markdown", "text/x-markdown") or path_suffix in (".md", ".markdown"):
        loader = _load_markdown
    elif content_type.startswith("text/") or path_suffix in (".txt", ".text"):
        loader = _load_plain
    elif path_suffix in _LOADERS:
        loader = _LOADERS[path_suffix]
    else:
        return [], problems + [f"skipped {url}: unsupported content type {content_type or 'unknown'} ({SUPPORTED_HINT})"]
    if charset and loader in (_load_html, _load_plain, _load_markdown, _load_csv, _load_json):
        try:
            data = data.decode(charset).encode("utf-8")
        except (LookupError, UnicodeDecodeError):
            pass
    try:
        text, title = loader(data, url)
    except _LoadProblem as problem:
        return [], problems + [str(problem)]
    if not text.strip():
        return [], problems + [f"skipped {url}: the page has no text"]
    return [Document(text=text, source=location, title=title or url)], problems


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------


def load_source(
    source: KnowledgeSource, root: Path, fetch_urls: bool = True, timeout: float = 5.0
) -> tuple[list[Document], list[str]]:
    """Read one `sources:` entry into documents; problems are sentences for the author, never exceptions."""
    root = Path(root)
    location = source.location
    try:
        if source.kind == "url":
            if not fetch_urls:
                return [], [f"did not fetch {location}: fetching web pages is turned off"]
            return _load_url(location, timeout)
        if source.path is None:
            return [], [f"{location}: not found (looked in {root})"]
        path = root / source.path
        if path.is_dir():
            return _load_directory(path, root, location)
        if path.is_file():
            return _load_file(path, _display_path(path, root))
        return [], [f"{location}: not found (looked for {path})"]
    except Exception as error:  # last line of defence: bad input must never crash the bot
        return [], [f"could not load {location}: {error or type(error).__name__}"]


# ---------------------------------------------------------------------------
# Chunking
# ---------------------------------------------------------------------------

_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+")


def _split_paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks; a Markdown heading line always starts a new block."""
    blocks: list[str] = []
    current: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        if _HEADING_LINE.match(line) and current:
            blocks.append("\n".join(current))
            current = []
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def _split_words(text: str, max_chars: int) -> list[str]:
    pieces: list[str] = []
    current = ""
    for word in text.split():
        while len(word) > max_chars:  # a single "word" longer than a chunk: the only hard cut
            if current:
                pieces.append(current)
                current = ""
            pieces.append(word[:max_chars])
            word = word[max_chars:]
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= max_chars:
            current += " " + word
        else:
            pieces.append(current)
            current = word
    if current:
        pieces.append(current)
    return pieces


def _split_sentences(text: str) -> list[str]:
    sentences = []
    for line in text.split("\n"):
        for sentence in _SENTENCE_END.split(line.strip()):
            if sentence.strip():
                sentences.append(sentence.strip())
    return sentences


def _units(paragraph: str, max_chars: int) -> list[str]:
    """Pieces of a paragraph no longer than `max_chars`: the paragraph, else sentences, else words."""
    if len(paragraph) <= max_chars:
        return [paragraph]
    units: list[str] = []
    for sentence in _split_sentences(paragraph):
        if len(sentence) <= max_chars:
            units.append(sentence)
        else:
            units.extend(_split_words(sentence, max_chars))
    return units


def _tail(text: str, overlap: int) -> str:
    """The end of `text`, at most `overlap` characters, starting at a sentence or word boundary."""
    if overlap <= 0 or not text:
        return ""
    if len(text) <= overlap:
        return text
    window = text[-overlap:]
    sentence_start = re.search(r"[.!?]\s+(\S)", window)
    if sentence_start:
        return window[sentence_start.start(1):].strip()
    space = re.search(r"\s", window)
    if space is None:
        return ""
    return window[space.end():].strip()


def chunk_documents(docs: list[Document], max_chars: int = 800, overlap: int = 100) -> list[Chunk]:
    """Cut documents into chunks of at most `max_chars` characters.

    Paragraphs (blank lines, Markdown headings) are kept whole and small ones packed together;
    longer ones split by sentence, then by word. A chunk that continues the previous one's text
    starts with up to `overlap` characters of it. Words are never cut unless one alone exceeds
    `max_chars`.
    """
    if max_chars < 20:
        raise ValueError("max_chars must be at least 20")
    overlap = max(0, min(overlap, max_chars // 2))
    chunks: list[Chunk] = []
    for doc in docs:
        pieces: list[str] = []
        current = ""
        current_is_heading_only = False
        for paragraph in _split_paragraphs(doc.text):
            is_heading = bool(_HEADING_LINE.match(paragraph)) and "\n" not in paragraph
            starts_section = bool(_HEADING_LINE.match(paragraph))
            units = _units(paragraph, max_chars)
            for position, unit in enumerate(units):
                separator = "\n\n" if position == 0 else " "
                if position == 0 and starts_section and current and not current_is_heading_only:
                    pieces.append(current)  # a new section starts a new chunk, without overlap
                    current = ""
                if not current:
                    current = unit
                elif len(current) + len(separator) + len(unit) <= max_chars:
                    current += separator + unit
                else:
                    pieces.append(current)
                    carried = _tail(current, overlap)
                    if carried and len(carried) + len(separator) + len(unit) <= max_chars:
                        current = carried + separator + unit
                    else:
                        current = unit
                current_is_heading_only = is_heading and current == unit
        if current:
            pieces.append(current)
        for index, piece in enumerate(pieces):
            chunks.append(Chunk(text=piece, source=doc.source, title=doc.title, index=index))
    return chunks
