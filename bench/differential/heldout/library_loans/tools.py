"""Tools for the City Library helpdesk (deterministic, no I/O)."""

LOANS = {
    "20481177": [
        {"title": "The Hobbit", "due": "2026-12-03", "renewals": 0, "reserved": False, "renewed_due": "2026-12-24"},
        {"title": "Dune", "due": "2026-12-05", "renewals": 0, "reserved": True, "renewed_due": ""},
        {"title": "Atomic Habits", "due": "2026-12-01", "renewals": 2, "reserved": False, "renewed_due": ""},
    ],
    "31415926": [],
}
CATALOG = {
    "project hail mary": {"title": "Project Hail Mary", "author": "Andy Weir", "available": {"Central": 0, "Eastside": 0}, "queue": 1},
    "dune": {"title": "Dune", "author": "Frank Herbert", "available": {"Central": 0, "Eastside": 1}, "queue": 0},
    "the hobbit": {"title": "The Hobbit", "author": "J.R.R. Tolkien", "available": {"Central": 3, "Eastside": 1}, "queue": 0},
}


def list_loans(card_number: str):
    """List the books on loan for a library card, with due dates."""
    card = "".join(ch for ch in str(card_number or "") if ch.isdigit())
    if card not in LOANS:
        return [{"status": "error", "msg": f"card {card_number} not found"}]
    items = LOANS[card]
    text = ", ".join(f"{b['title']} (due {b['due']})" for b in items) or "no books"
    return [{"status": "success", "msg": text}, {"arg": "loans", "value": text}]


def _renew_one(book):
    if book["reserved"]:
        return False, f"{book['title']} is reserved by another member."
    if book["renewals"] >= 2:
        return False, f"{book['title']} has already been renewed 2 times."
    return True, f"{book['title']} is now due on {book['renewed_due']}."


def renew_loan(card_number: str, title: str = ""):
    """Renew one book by title, or all books when title is 'all'."""
    card = "".join(ch for ch in str(card_number or "") if ch.isdigit())
    if card not in LOANS:
        return [{"status": "error", "msg": "card not found"}, {"arg": "details", "value": "the card was not found."}]
    wanted = str(title or "").strip().lower()
    books = LOANS[card]
    if wanted in ("all", "all of them", "everything"):
        results = [_renew_one(b) for b in books]
        details = " ".join(msg for _, msg in results)
        ok = any(r for r, _ in results)
        return [{"status": "success" if ok else "error", "msg": details}, {"arg": "details", "value": details}]
    for b in books:
        if b["title"].lower() in wanted or wanted in b["title"].lower() and wanted:
            ok, msg = _renew_one(b)
            return [{"status": "success" if ok else "error", "msg": msg}, {"arg": "details", "value": msg}]
    msg = f"no book called {title} is on loan on this card."
    return [{"status": "error", "msg": msg}, {"arg": "details", "value": msg}]


def search_catalog(query: str):
    """Search the catalogue by title or author; returns availability per branch."""
    q = str(query or "").strip().lower()
    for key, book in CATALOG.items():
        if key in q or q in key or q in book["author"].lower():
            avail = ", ".join(f"{branch}: {n}" for branch, n in book["available"].items())
            return [{"status": "success",
                     "msg": f"{book['title']} by {book['author']}. Copies available - {avail}. Holds in queue: {book['queue']}."}]
    return [{"status": "error", "msg": f"nothing found for {query}"}]


def place_hold(card_number: str, title: str):
    """Place a hold on a title for a library card; returns the hold reference and queue position."""
    card = "".join(ch for ch in str(card_number or "") if ch.isdigit())
    if card not in LOANS:
        return [{"status": "error", "msg": "card not found"}]
    book = CATALOG.get(str(title or "").strip().lower())
    if book is None:
        return [{"status": "error", "msg": f"{title} is not in the catalogue"}]
    initials = "".join(w[0] for w in book["title"].split()).upper()
    ref = f"HOLD-{initials}-{card[-3:]}"
    return [{"status": "success", "msg": f"Hold {ref} placed on {book['title']}; position {book['queue'] + 1} in the queue."},
            {"arg": "hold_ref", "value": ref}]
