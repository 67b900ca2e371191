"""Reading documents to text: one loader per file format, files and folders, and fetched web pages."""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

from frontdesk.access import escape
from frontdesk.runtime.retrieval.documents import Document
from frontdesk.runtime.retrieval.fetch import MAX_DOWNLOAD_BYTES, FetchedPage

# Files bigger than this are skipped with a problem instead of being read into memory.
MAX_FILE_BYTES = 20 * 1024 * 1024

SUPPORTED_HINT = "use .txt, .md, .csv, .pdf, .html, .json or .docx"


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
                except Exception:  # noqa: BLE001 - an undecryptable file is said so below
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
            except Exception:  # noqa: BLE001 - a damaged title is no title
                title = None
        except _LoadProblem:
            raise
        except Exception as error:  # noqa: BLE001 - pypdf raises many kinds of errors for damaged files
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


def load_file(path: Path, display: str) -> tuple[list[Document], list[str]]:
    """The document of one file, shown to the author as `display`, and its problems."""
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


def display_path(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def load_directory(directory: Path, root: Path, location: str) -> tuple[list[Document], list[str]]:
    """The documents of every file under `directory` (hidden ones skipped) in path order, and the problems."""
    documents: list[Document] = []
    problems: list[str] = []
    files: list[Path] = []
    for current, folders, names in os.walk(directory, followlinks=False):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        files.extend(Path(current) / n for n in names if not n.startswith("."))
    for path in sorted(files, key=lambda p: p.relative_to(directory).as_posix()):
        if not path.is_file():
            continue
        outside = escape(root, path)  # a symbolic link leading out of the program's folder
        if outside:
            problems.append(f"{display_path(path, root)}: not read: {outside}")
            continue
        found, trouble = load_file(path, display_path(path, root))
        documents.extend(found)
        problems.extend(trouble)
    if not documents:
        problems.append(f"found no readable documents in {location}")
    return documents, problems


# ---------------------------------------------------------------------------
# Web pages
# ---------------------------------------------------------------------------


def load_page(page: FetchedPage, location: str) -> tuple[list[Document], list[str]]:
    """The document of a fetched page, read by its content type (or its address's suffix), and its problems."""
    url = page.url
    final_url = page.final_url or url
    content_type = page.content_type
    charset = page.charset
    problems = []
    if page.truncated:
        problems.append(f"{url} is larger than {MAX_DOWNLOAD_BYTES // (1024 * 1024)} MB; only the start was read")
    data = bytes(page.data)
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
