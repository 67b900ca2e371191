"""Maple Grove Library tools (held-out benchmark bot): plain Python data, deterministic, no network.

Every tool follows the ADL return convention: a list whose first item is
{"status": "success" | "error", "msg": ...}, followed by {"arg": name, "value": ...} updates
and optional {"bot": text} messages. Bad input gives an "error" status, never an exception.
Today is fixed at 2026-11-22 (FRONTDESK_EXAMPLE_TODAY overrides it).
"""

import datetime
import os
import re

CATALOGUE = [
    {"title": "The Orchard Keeper's Year", "author": "Lena Marwick", "subject": "gardening",
     "on_shelf": 2, "holds": 0},
    {"title": "Growing Food in Small Spaces", "author": "Ravi Chandran", "subject": "gardening",
     "on_shelf": 0, "holds": 3},
    {"title": "Tidewater Atlas", "author": "Oona Fairley", "subject": "maps and travel",
     "on_shelf": 1, "holds": 0},
    {"title": "Practical Woodworking", "author": "Gus Halloran", "subject": "crafts",
     "on_shelf": 3, "holds": 0},
    {"title": "The Silent Canal", "author": "Hana Kowalczyk", "subject": "crime fiction",
     "on_shelf": 0, "holds": 1},
    {"title": "A Quiet Verdict", "author": "Hana Kowalczyk", "subject": "crime fiction",
     "on_shelf": 4, "holds": 0},
    {"title": "Stars for Beginners", "author": "Milo Asante", "subject": "astronomy",
     "on_shelf": 2, "holds": 0},
    {"title": "Bread Every Day", "author": "Signe Holm", "subject": "cooking",
     "on_shelf": 0, "holds": 0},
]

LOANS = {
    "sam rivera": [
        {"title": "The Orchard Keeper's Year", "due": "2026-11-24"},
        {"title": "Tidewater Atlas", "due": "2026-11-26"},
        {"title": "Practical Woodworking", "due": "2026-12-09"},
    ],
}

_RENEWAL_DAYS = 21


def _today() -> datetime.date:
    pinned = os.environ.get("FRONTDESK_EXAMPLE_TODAY", "").strip()
    try:
        return datetime.date.fromisoformat(pinned) if pinned else datetime.date(2026, 11, 22)
    except ValueError:
        return datetime.date(2026, 11, 22)


def _norm(text) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", str(text or "").lower()).split())


def _loans(member):
    loans = LOANS.get(_norm(member))
    if loans is None:
        raise ValueError(f"I couldn't find a member called '{member}'.")
    return loans


def search_catalogue(query: str):
    """Search the catalogue by title, author or subject.

    Args:
        query: Words of a title, an author's name or a subject, e.g. "gardening" or "Kowalczyk".
    """
    words = [w for w in _norm(query).split() if len(w) > 2 and w not in ("the", "and", "books", "book", "about")]
    if not words:
        return [{"status": "error", "msg": "Please give a title, an author or a subject."}]
    found = []
    for book in CATALOGUE:
        text = _norm(f"{book['title']} {book['author']} {book['subject']}")
        if any(w in text.split() or w.rstrip("s") in text.split() for w in words):
            found.append(book)
    if not found:
        return [{"status": "error", "msg": f"Nothing in the catalogue matches '{query}'."}]
    lines = []
    for b in found:
        where = f"{b['on_shelf']} on the shelf" if b["on_shelf"] else (
            f"all copies on loan, {b['holds']} holds waiting")
        lines.append(f"{b['title']} by {b['author']} ({b['subject']}; {where})")
    print("Found: " + "; ".join(lines))
    return [
        {"status": "success", "msg": f"{len(found)} matching books."},
        {"arg": "matches", "value": [b["title"] for b in found]},
    ]


def place_hold(member: str, title: str):
    """Place a hold on a book for the member.

    Args:
        member: The member's full name, e.g. "Sam Rivera".
        title: The exact title of the book.
    """
    try:
        _loans(member)
    except ValueError as problem:
        return [{"status": "error", "msg": str(problem)}]
    for book in CATALOGUE:
        if _norm(book["title"]) == _norm(title):
            if book["on_shelf"]:
                msg = (f"Hold placed on {book['title']}: a copy will be waiting at the front desk "
                       "from tomorrow for 7 days.")
            else:
                msg = (f"Hold placed on {book['title']}: you are number {book['holds'] + 1} in "
                       "the queue; we will email you when it is ready.")
            return [{"status": "success", "msg": msg}, {"arg": "title", "value": book["title"]}]
    return [{"status": "error", "msg": f"'{title}' is not in the catalogue."}]


def list_loans(member: str):
    """Show the member's current loans and their due dates.

    Args:
        member: The member's full name.
    """
    try:
        loans = _loans(member)
    except ValueError as problem:
        return [{"status": "error", "msg": str(problem)}]
    lines = [f"- {l['title']}, due {datetime.date.fromisoformat(l['due']):%d/%m/%Y}" for l in loans]
    return [
        {"status": "success", "msg": f"{len(loans)} loans."},
        {"bot": "You have these books on loan:\n" + "\n".join(lines)},
        {"arg": "loans", "value": [l["title"] for l in loans]},
    ]


def renew(member: str, scope: str = "all"):
    """Renew the member's loans for 21 more days from today.

    Args:
        member: The member's full name.
        scope: "all" to renew every loan, or "due_soon" for loans due in the next 7 days.
    """
    try:
        loans = _loans(member)
    except ValueError as problem:
        return [{"status": "error", "msg": str(problem)},
                {"arg": "status", "value": False}, {"arg": "summary", "value": str(problem)}]
    kind = _norm(scope).replace(" ", "_")
    today = _today()
    if kind == "all":
        chosen = loans
    elif kind in ("due_soon", "soon"):
        chosen = [l for l in loans
                  if (datetime.date.fromisoformat(l["due"]) - today).days <= 7]
    else:
        text = f"'{scope}' is not a renewal choice (all or due_soon)."
        return [{"status": "error", "msg": text},
                {"arg": "status", "value": False}, {"arg": "summary", "value": text}]
    new_due = today + datetime.timedelta(days=_RENEWAL_DAYS)
    titles = ", ".join(l["title"] for l in chosen)
    text = f"Renewed {titles}; now due {new_due:%d/%m/%Y}."
    return [
        {"status": "success", "msg": text},
        {"arg": "status", "value": True},
        {"arg": "summary", "value": text},
    ]
