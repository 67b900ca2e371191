"""The bookstore example's custom functions (ADL tools), backed by a small SQLite database.

Every tool follows the ADL return convention: a list whose first item is
{"status": "success" | "error", "msg": ...} for the caller agent, followed by
{"arg": name, "value": ...} argument updates. What a tool prints also goes to the caller agent.
Invalid input gives an "error" status, never an exception.

The database is created (and filled from data.py) on first use, in the folder named by the
environment variable FRONTDESK_EXAMPLE_DB_DIR, or in a `.data/` folder beside this file.
Each call opens and closes its own connection, so changing the variable takes effect at once.
Set FRONTDESK_EXAMPLE_TODAY=YYYY-MM-DD to pin "today" for repeatable conversations.
"""

import collections
import contextlib
import datetime
import importlib.util
import json
import os
import pathlib
import re
import sqlite3

_EXAMPLE_DIR = pathlib.Path(__file__).resolve().parent
_DB_FILE_NAME = "bookstore.db"
_MAX_BESTSELLERS = 10


def _load_seed_data():
    """Load data.py from this folder by path (the example folder is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "frontdesk_example_bookstore_data", _EXAMPLE_DIR / "data.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_seed = _load_seed_data()

_SCHEMA = """
CREATE TABLE IF NOT EXISTS books (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL UNIQUE,
    author TEXT NOT NULL,
    genre TEXT NOT NULL,
    price REAL NOT NULL,
    sales_rank INTEGER NOT NULL,
    stock INTEGER NOT NULL CHECK (stock >= 0)
);
CREATE TABLE IF NOT EXISTS orders (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    order_date TEXT NOT NULL,
    placed_at TEXT NOT NULL,
    total REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS order_items (
    order_id INTEGER NOT NULL REFERENCES orders(id),
    book_id INTEGER NOT NULL REFERENCES books(id),
    quantity INTEGER NOT NULL CHECK (quantity > 0),
    unit_price REAL NOT NULL,
    PRIMARY KEY (order_id, book_id)
);
"""


def _database_path() -> pathlib.Path:
    folder = os.environ.get("FRONTDESK_EXAMPLE_DB_DIR") or str(_EXAMPLE_DIR / ".data")
    return pathlib.Path(folder) / _DB_FILE_NAME


@contextlib.contextmanager
def _open_database():
    """Yield a connection to the example database, creating and seeding it on first use.

    The block runs in one transaction: committed on success, rolled back on an exception.
    """
    path = _database_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    try:
        connection.row_factory = sqlite3.Row
        connection.execute("PRAGMA foreign_keys = ON")
        connection.executescript(_SCHEMA)
        with connection:
            if connection.execute("SELECT COUNT(*) FROM books").fetchone()[0] == 0:
                connection.executemany(
                    "INSERT INTO books (title, author, genre, price, sales_rank, stock)"
                    " VALUES (:title, :author, :genre, :price, :sales_rank, :stock)",
                    _seed.CATALOGUE,
                )
        with connection:
            yield connection
    finally:
        connection.close()


def _today() -> datetime.date:
    pinned = os.environ.get("FRONTDESK_EXAMPLE_TODAY", "").strip()
    if pinned:
        try:
            return datetime.date.fromisoformat(pinned)
        except ValueError:
            pass
    return datetime.date.today()


def _normalise(text: str) -> str:
    """Lower-case text with punctuation removed and spaces collapsed, for lenient matching."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def _without_article(text: str) -> str:
    for article in ("the ", "a ", "an "):
        if text.startswith(article):
            return text[len(article):]
    return text


def _find_book(connection, name: str):
    """Return (book row or None, list of candidate titles when the name is ambiguous)."""
    wanted = _normalise(name)
    if not wanted:
        return None, []
    books = connection.execute("SELECT * FROM books ORDER BY sales_rank").fetchall()
    for book in books:
        if _normalise(book["title"]) == wanted:
            return book, []
    for book in books:
        if _without_article(_normalise(book["title"])) == _without_article(wanted):
            return book, []
    if len(wanted) >= 4:
        partial = [book for book in books if wanted in _normalise(book["title"])]
        if len(partial) == 1:
            return partial[0], []
        if partial:
            return None, [book["title"] for book in partial]
    return None, []


def _describe(book) -> str:
    availability = f"{book['stock']} in stock" if book["stock"] > 0 else "out of stock"
    return (
        f"{book['title']} by {book['author']} ({book['genre']}, "
        f"${book['price']:.2f}, {availability})"
    )


def _known_genres(connection) -> list[str]:
    rows = connection.execute("SELECT DISTINCT genre FROM books ORDER BY genre").fetchall()
    return [row["genre"] for row in rows]


def _canonical_genre(genre: str, known: list[str]) -> str | None:
    text = " ".join(str(genre).lower().replace("_", " ").split())
    for suffix in (" books", " book", " novels", " novel"):
        if text.endswith(suffix) and len(text) > len(suffix):
            text = text[: -len(suffix)]
            break
    candidates = [text]
    if text.endswith("ies"):
        candidates.append(text[:-3] + "y")
    if text.endswith("s"):
        candidates.append(text[:-1])
    for candidate in candidates:
        if candidate in known:
            return candidate
        if candidate in _seed.GENRE_ALIASES:
            return _seed.GENRE_ALIASES[candidate]
    return None


def _titles_from(value) -> list[str]:
    """Book titles from a list, a single title, a comma-separated string or a JSON list."""
    if value is None:
        return []
    if isinstance(value, dict):
        value = value.get("title") or value.get("book_name") or value.get("name") or ""
    if isinstance(value, (list, tuple, set)):
        titles = []
        for item in value:
            titles.extend(_titles_from(item))
        return titles
    text = str(value).strip()
    if text.startswith("["):
        try:
            return _titles_from(json.loads(text))
        except ValueError:
            text = text.strip("[]")
    titles = []
    for part in re.split(r"[,;\n]", text):
        title = part.strip().strip("\"'").strip()
        if title:
            titles.append(title)
    return titles


def _order_result(ok: bool, msg: str, order_id=None) -> list:
    return [
        {"status": "success" if ok else "error", "msg": msg},
        {"arg": "status", "value": ok},
        {"arg": "order_id", "value": order_id},
    ]


def get_date():
    """Get today's date (YYYY-MM-DD), used as the date of new orders."""
    today = _today().isoformat()
    return [
        {"status": "success", "msg": f"Today is {today}."},
        {"arg": "today", "value": today},
    ]


def query_book_genre(book_name: str):
    """Look up the genre of a book, e.g. the customer's favourite book.

    Args:
        book_name: The title of the book, as the customer said it (partial titles are accepted).
    """
    if not isinstance(book_name, str) or not book_name.strip():
        return [{"status": "error", "msg": "Please give the title of a book to look up."}]
    with _open_database() as connection:
        book, candidates = _find_book(connection, book_name)
        genres = _known_genres(connection)
    if candidates:
        return [{
            "status": "error",
            "msg": f"Several books match '{book_name}': {', '.join(candidates)}. "
                   "Ask the customer which one they mean.",
        }]
    if book is not None:
        print(f"'{book['title']}' is a {book['genre']} book.")
        return [
            {"status": "success", "msg": f"Found {_describe(book)}."},
            {"arg": "genre", "value": book["genre"]},
            {"arg": "book_name", "value": book["title"]},
            {"arg": "book_info", "value": _describe(book)},
        ]
    reference_genre = _seed.REFERENCE_TITLES.get(_normalise(book_name))
    if reference_genre is not None:
        title = book_name.strip()
        print(f"'{title}' is a {reference_genre} book (we do not sell it).")
        return [
            {"status": "success",
             "msg": f"'{title}' is a {reference_genre} book; the store does not stock it."},
            {"arg": "genre", "value": reference_genre},
            {"arg": "book_name", "value": title},
            {"arg": "book_info", "value": f"{title} ({reference_genre}, not stocked)"},
        ]
    return [{
        "status": "error",
        "msg": f"I could not find a book called '{book_name}'. "
               f"Ask the customer for a genre instead; we stock {', '.join(genres)}.",
    }]


def find_bestsellers(genre: str, limit: int = 3):
    """Find the best-selling books of a genre that are in stock.

    Args:
        genre: The book genre, e.g. "mystery", "fantasy" or "science fiction".
        limit: How many books to return (1 to 10, default 3).
    """
    if isinstance(limit, bool):
        return [{"status": "error", "msg": "The limit must be a whole number from 1 to 10."}]
    try:
        count = int(str(limit).strip()) if limit is not None else 3
    except ValueError:
        return [{"status": "error", "msg": f"The limit must be a whole number, not '{limit}'."}]
    if count < 1:
        return [{"status": "error", "msg": "The limit must be at least 1."}]
    count = min(count, _MAX_BESTSELLERS)
    if not isinstance(genre, str) or not genre.strip():
        return [{"status": "error", "msg": "Please give a genre to search."}]
    with _open_database() as connection:
        known = _known_genres(connection)
        canonical = _canonical_genre(genre, known)
        if canonical is None:
            return [{
                "status": "error",
                "msg": f"We have no '{genre}' section. Genres we stock: {', '.join(known)}.",
            }]
        books = connection.execute(
            "SELECT * FROM books WHERE genre = ? AND stock > 0 ORDER BY sales_rank LIMIT ?",
            (canonical, count),
        ).fetchall()
    if not books:
        return [{"status": "error", "msg": f"All our {canonical} books are out of stock."}]
    titles = [book["title"] for book in books]
    listing = "; ".join(f"{b['title']} by {b['author']} (${b['price']:.2f})" for b in books)
    print(f"Best sellers in {canonical}: {listing}")
    return [
        {"status": "success", "msg": f"Found {len(books)} best-selling {canonical} books."},
        {"arg": "genre", "value": canonical},
        {"arg": "bestsellers", "value": titles},
        {"arg": "book_info", "value": listing},
    ]


def place_order(ordered_book: list[str] | str, date: str = ""):
    """Place an order for the books the customer selected and reserve the copies.

    Args:
        ordered_book: The titles to order: a list, one title, or a comma-separated string.
            A title listed twice orders two copies.
        date: The order date (YYYY-MM-DD); today when empty.
    """
    titles = _titles_from(ordered_book)
    if not titles:
        return _order_result(False, "No books were selected, so there is nothing to order.")
    order_date = str(date).strip() if date not in (None, "") else _today().isoformat()
    with _open_database() as connection:
        quantities = collections.Counter()
        books = {}
        problems = []
        for title in titles:
            book, candidates = _find_book(connection, title)
            if book is None:
                if candidates:
                    problems.append(f"'{title}' matches several books ({', '.join(candidates)})")
                else:
                    problems.append(f"'{title}' is not in our catalogue")
                continue
            books[book["id"]] = book
            quantities[book["id"]] += 1
        for book_id, quantity in quantities.items():
            book = books[book_id]
            if book["stock"] == 0:
                problems.append(f"'{book['title']}' is out of stock")
            elif book["stock"] < quantity:
                problems.append(f"only {book['stock']} copies of '{book['title']}' are left")
        if problems:
            return _order_result(False, "The order was not placed: " + "; ".join(problems) + ".")
        total = round(sum(books[i]["price"] * q for i, q in quantities.items()), 2)
        placed_at = datetime.datetime.now().isoformat(timespec="seconds")
        cursor = connection.execute(
            "INSERT INTO orders (order_date, placed_at, total) VALUES (?, ?, ?)",
            (order_date, placed_at, total),
        )
        order_id = cursor.lastrowid
        for book_id, quantity in quantities.items():
            connection.execute(
                "INSERT INTO order_items (order_id, book_id, quantity, unit_price)"
                " VALUES (?, ?, ?, ?)",
                (order_id, book_id, quantity, books[book_id]["price"]),
            )
            connection.execute(
                "UPDATE books SET stock = stock - ? WHERE id = ?", (quantity, book_id)
            )
    summary = ", ".join(
        f"{books[i]['title']}" + (f" x{q}" if q > 1 else "") for i, q in quantities.items()
    )
    return _order_result(
        True, f"Order {order_id} placed on {order_date}: {summary}. Total ${total:.2f}.", order_id
    )
