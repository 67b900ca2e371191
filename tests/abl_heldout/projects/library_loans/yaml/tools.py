"""In-memory tools for the library project (no network)."""

CATALOG = {
    "dune": {"book_id": "B-1001", "title": "Dune", "available": True},
    "emma": {"book_id": "B-1002", "title": "Emma", "available": False},
    "ulysses": {"book_id": "B-1003", "title": "Ulysses", "available": True},
}
FINES = {"M12345": 0.0, "M55555": 12.5}
LOANS = {
    "L100001": {"loan_id": "L100001", "title": "Dune", "renewals_used": 0, "days_overdue": 0, "due_date": "2026-12-05"},
    "L100002": {"loan_id": "L100002", "title": "Emma", "renewals_used": 2, "days_overdue": 0, "due_date": "2026-12-06"},
    "L100003": {"loan_id": "L100003", "title": "Ulysses", "renewals_used": 1, "days_overdue": 3, "due_date": "2026-11-25"},
}


def search_catalog(title):
    """Find a book in the catalogue by title."""
    book = CATALOG.get(str(title).strip().lower())
    if not book:
        return {"found": False, "book_id": "", "title": str(title), "available": False}
    return dict(book, found=True)


def create_loan(member_id, book_id):
    """Lend a book to a member."""
    return {"loan_id": "L" + str(book_id)[-4:].rjust(6, "0"), "due_date": "2026-12-19"}


def place_hold(member_id, book_id):
    """Place a hold on a book that is out on loan."""
    return {"hold_id": "H-" + str(book_id)[-4:], "position": 2}


def compute_fines(member_id):
    """Total unpaid fines of a member."""
    return {"outstanding_fines": FINES.get(str(member_id), 0.0)}


def get_loan(loan_id):
    """Look up a loan."""
    loan = LOANS.get(str(loan_id))
    if loan is None:
        return {"error": "no such loan: " + str(loan_id)}
    return dict(loan)


def renew_loan(loan_id):
    """Renew a loan for three weeks."""
    loan = LOANS[str(loan_id)]
    loan["renewals_used"] += 1
    return {"new_due_date": "2026-12-26", "renewals_used": loan["renewals_used"]}
