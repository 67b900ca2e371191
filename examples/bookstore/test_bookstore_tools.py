"""Tests for the bookstore example's tools, called directly against a fresh SQLite database."""

import importlib.util
import pathlib
import sqlite3

import pytest

_TOOLS_FILE = pathlib.Path(__file__).with_name("tools.py")


def _load_tools_module():
    """Import tools.py by file path: the example folder is not a package."""
    spec = importlib.util.spec_from_file_location("bookstore_tools_under_test", _TOOLS_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def tools(tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path))
    monkeypatch.setenv("FRONTDESK_EXAMPLE_TODAY", "2025-03-14")
    return _load_tools_module()


def _assert_convention(result):
    """The ADL return convention: a status item first, then bot messages and arg updates."""
    assert isinstance(result, list) and result
    head = result[0]
    assert set(head) == {"status", "msg"}
    assert head["status"] in ("success", "error")
    assert isinstance(head["msg"], str) and head["msg"]
    for item in result[1:]:
        assert set(item) in ({"bot"}, {"arg", "value"}), item


def _args(result) -> dict:
    return {item["arg"]: item["value"] for item in result[1:] if "arg" in item}


def _stock(tmp_path, title) -> int:
    connection = sqlite3.connect(tmp_path / "bookstore.db")
    try:
        return connection.execute("SELECT stock FROM books WHERE title = ?", (title,)).fetchone()[0]
    finally:
        connection.close()


def test_get_date_reports_today_as_iso_date(tools):
    result = tools.get_date()
    _assert_convention(result)
    assert result[0]["status"] == "success"
    assert _args(result) == {"today": "2025-03-14"}


def test_database_is_created_in_the_configured_folder(tools, tmp_path):
    tools.find_bestsellers("fantasy")
    assert (tmp_path / "bookstore.db").is_file()


def test_query_book_genre_finds_a_catalogue_book_case_insensitively(tools, capsys):
    result = tools.query_book_genre("  emberWILD ")
    _assert_convention(result)
    assert result[0]["status"] == "success"
    args = _args(result)
    assert args["genre"] == "fantasy"
    assert args["book_name"] == "Emberwild"
    assert "Tamsin Reyes" in args["book_info"]
    assert "fantasy" in capsys.readouterr().out


def test_query_book_genre_accepts_a_partial_title(tools):
    result = tools.query_book_genre("lantern room")
    assert _args(result)["book_name"] == "The Lantern Room Murders"
    assert _args(result)["genre"] == "mystery"


def test_query_book_genre_knows_famous_books_the_store_does_not_sell(tools):
    result = tools.query_book_genre("The Hobbit")
    _assert_convention(result)
    assert result[0]["status"] == "success"
    assert _args(result)["genre"] == "fantasy"
    assert "not stock" in result[0]["msg"]


def test_query_book_genre_reports_an_ambiguous_title(tools):
    result = tools.query_book_genre("ledger")
    _assert_convention(result)
    assert result[0]["status"] == "error"
    assert "A Ledger of Lies" in result[0]["msg"]
    assert "The Silk Ledger" in result[0]["msg"]


@pytest.mark.parametrize("book_name", ["Nonexistent Saga", "", "   ", None])
def test_query_book_genre_rejects_unknown_or_empty_titles(tools, book_name):
    result = tools.query_book_genre(book_name)
    _assert_convention(result)
    assert result[0]["status"] == "error"
    assert _args(result) == {}


def test_find_bestsellers_returns_in_stock_books_by_sales_rank(tools, capsys):
    result = tools.find_bestsellers("fantasy")
    _assert_convention(result)
    assert result[0]["status"] == "success"
    args = _args(result)
    # The Cartographer's Daughter ranks higher but is out of stock.
    assert args["bestsellers"] == ["Crown of Ash and Ivy", "Emberwild", "Songs of the Drowned City"]
    assert args["genre"] == "fantasy"
    printed = capsys.readouterr().out
    assert "Crown of Ash and Ivy" in printed and "Emberwild" in printed


@pytest.mark.parametrize(
    ("genre", "canonical"),
    [("Sci-Fi", "science fiction"), ("mysteries", "mystery"), ("crime", "mystery"),
     ("cookbooks", "cooking"), ("science books", "science"), ("History", "history")],
)
def test_find_bestsellers_understands_genre_variants(tools, genre, canonical):
    result = tools.find_bestsellers(genre)
    assert result[0]["status"] == "success"
    assert _args(result)["genre"] == canonical


def test_find_bestsellers_honours_the_limit_given_as_text(tools):
    result = tools.find_bestsellers("romance", "2")
    assert _args(result)["bestsellers"] == ["Letters to Larkspur", "Second Spring in Avignon"]


@pytest.mark.parametrize(
    ("genre", "limit"),
    [("poetry", 3), ("", 3), ("fantasy", 0), ("fantasy", "many"), ("fantasy", True)],
)
def test_find_bestsellers_rejects_bad_input(tools, genre, limit):
    result = tools.find_bestsellers(genre, limit)
    _assert_convention(result)
    assert result[0]["status"] == "error"


def test_find_bestsellers_lists_known_genres_for_an_unknown_one(tools):
    result = tools.find_bestsellers("poetry")
    assert "mystery" in result[0]["msg"] and "fantasy" in result[0]["msg"]


def _assert_order_shape(result, ok):
    _assert_convention(result)
    assert len(result) == 3
    assert result[0]["status"] == ("success" if ok else "error")
    assert result[1] == {"arg": "status", "value": ok}
    assert result[2]["arg"] == "order_id"


def test_place_order_stores_the_order_and_reduces_stock(tools, tmp_path):
    result = tools.place_order(["Emberwild", "The Glass Orbit"], "2025-03-14")
    _assert_order_shape(result, True)
    order_id = result[2]["value"]
    assert isinstance(order_id, int)
    assert "$31.98" in result[0]["msg"]
    assert _stock(tmp_path, "Emberwild") == 6 - 1
    connection = sqlite3.connect(tmp_path / "bookstore.db")
    try:
        order = connection.execute(
            "SELECT order_date, total FROM orders WHERE id = ?", (order_id,)
        ).fetchone()
        items = connection.execute(
            "SELECT COUNT(*) FROM order_items WHERE order_id = ?", (order_id,)
        ).fetchone()[0]
    finally:
        connection.close()
    assert order == ("2025-03-14", 31.98)
    assert items == 2


@pytest.mark.parametrize(
    "ordered_book",
    ["Emberwild", "Emberwild, The Glass Orbit", "emberwild; the glass orbit",
     '["Emberwild", "The Glass Orbit"]', "['Emberwild', 'The Glass Orbit']",
     [{"title": "Emberwild"}]],
)
def test_place_order_accepts_lists_single_titles_and_comma_separated_text(tools, ordered_book):
    result = tools.place_order(ordered_book, "2025-03-14")
    _assert_order_shape(result, True)
    assert "Emberwild" in result[0]["msg"]


def test_place_order_counts_repeated_titles_as_copies(tools, tmp_path):
    result = tools.place_order("Emberwild, Emberwild", "2025-03-14")
    _assert_order_shape(result, True)
    assert "x2" in result[0]["msg"]
    assert _stock(tmp_path, "Emberwild") == 4


def test_place_order_uses_today_when_no_date_is_given(tools, tmp_path):
    result = tools.place_order("Emberwild", None)
    _assert_order_shape(result, True)
    assert "2025-03-14" in result[0]["msg"]


@pytest.mark.parametrize("ordered_book", [[], "", "  ,  ", None])
def test_place_order_fails_cleanly_for_an_empty_order(tools, ordered_book):
    result = tools.place_order(ordered_book, "2025-03-14")
    _assert_order_shape(result, False)
    assert result[2]["value"] is None


def test_place_order_fails_cleanly_for_an_out_of_stock_book(tools, tmp_path):
    result = tools.place_order(["Emberwild", "Quiet Machines"], "2025-03-14")
    _assert_order_shape(result, False)
    assert "Quiet Machines" in result[0]["msg"] and "out of stock" in result[0]["msg"]
    # Nothing was reserved: the whole order failed.
    assert _stock(tmp_path, "Emberwild") == 6


def test_place_order_fails_when_more_copies_are_wanted_than_in_stock(tools):
    result = tools.place_order(["The Ninth Witness"] * 3, "2025-03-14")
    _assert_order_shape(result, False)
    assert "only 2 copies" in result[0]["msg"]


def test_place_order_fails_cleanly_for_an_unknown_book(tools):
    result = tools.place_order("Emberwild, Nonexistent Saga", "2025-03-14")
    _assert_order_shape(result, False)
    assert "Nonexistent Saga" in result[0]["msg"]


def test_each_test_gets_a_fresh_database(tools, tmp_path):
    # Other tests order copies of Emberwild; here the stock is back to the seed value.
    tools.find_bestsellers("fantasy")
    assert _stock(tmp_path, "Emberwild") == 6
