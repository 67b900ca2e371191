"""A long session's trace is read a page or a turn at a time: the store's paged reads and turn lookup on
every store, the HTTP API's cursor and turn ranges, and `frontdesk trace --turn`."""

from __future__ import annotations

import json
import textwrap

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from frontdesk.cli import app as cli_app
from frontdesk.lang import load_program
from frontdesk.server.app import create_app
from frontdesk.server.auth import ServerSettings
from frontdesk.store.base import events_before_turn, trace_page
from frontdesk.store.sqlite import SqliteSessionStore
from live_stores import STORE_KINDS, fresh_store

ECHO = """
main:
  type: flow agent
  steps:
    - label: again
    - user
    - bot: "Noted."
    - next: again
"""
TOKEN = "paging-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(params=STORE_KINDS)
def store(request, tmp_path):
    with fresh_store(request.param, tmp_path, "paging") as opened:
        yield opened


def _fill(store, turns: int, per_turn) -> None:
    """`turns` turns saved as the engine saves them, turn t with per_turn(t) events (0 is allowed)."""
    for turn in range(turns):
        store.save_turn("s", {"turn": turn}, [{"seq": 0, "turn": turn, "type": f"e{turn}.{i}"}
                                              for i in range(per_turn(turn))])


def test_events_since_takes_a_limit(store):
    _fill(store, 3, lambda t: 2)
    assert [e["type"] for e in store.events_since("s", 1, 3)] == ["e0.1", "e1.0", "e1.1"]
    assert [e["type"] for e in store.events_since("s", 4, 10)] == ["e2.0", "e2.1"]
    assert store.events_since("s", 2, 0) == [] and store.events_since("s", 6, 5) == []
    assert len(store.events_since("s", 0)) == 6  # no limit: the rest of the log


def test_the_first_event_of_a_turn_is_found_however_the_turns_are_sized(store):
    sizes = {0: 1, 1: 0, 2: 5, 3: 0, 4: 0, 5: 3, 6: 1, 7: 9, 8: 2}  # turns with no events too
    _fill(store, len(sizes), sizes.__getitem__)
    starts = {}
    total = 0
    for turn, size in sizes.items():
        starts[turn] = total
        total += size
    for turn in sizes:
        assert events_before_turn(store, "s", turn) == starts[turn], turn
    assert events_before_turn(store, "s", 99) == total
    assert events_before_turn(store, "nobody", 3) == 0


def test_trace_pages_follow_the_cursor_and_keep_to_the_turns_asked(store):
    _fill(store, 6, lambda t: 3)
    page, following = trace_page(store, "s", 0, 4)
    assert [e["type"] for e in page] == ["e0.0", "e0.1", "e0.2", "e1.0"] and following == 4
    page, following = trace_page(store, "s", following, 20)
    assert len(page) == 14 and following is None
    page, following = trace_page(store, "s", 0, 2, first_turn=2, last_turn=3)
    assert [e["type"] for e in page] == ["e2.0", "e2.1"] and following == 8
    page, following = trace_page(store, "s", following, 2, first_turn=2, last_turn=3)
    assert [e["type"] for e in page] == ["e2.2", "e3.0"] and following == 10
    page, following = trace_page(store, "s", following, 2, first_turn=2, last_turn=3)
    assert [e["type"] for e in page] == ["e3.1", "e3.2"] and following is None  # turn 4 is not asked for
    page, following = trace_page(store, "s", 0, 100, first_turn=5)
    assert [e["type"] for e in page] == ["e5.0", "e5.1", "e5.2"] and following is None


def _client(tmp_path) -> TestClient:
    (tmp_path / "agents.yml").write_text(textwrap.dedent(ECHO), encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None, diags
    settings = ServerSettings(tokens={TOKEN: "pat"})
    store = SqliteSessionStore(str(tmp_path / "s.sqlite3"))
    return TestClient(create_app({"echo": program}, store, None, settings))


@pytest.fixture()
def client(tmp_path):
    return _client(tmp_path)


def _session_with_turns(client, turns: int) -> str:
    sid = client.post("/v1/sessions", json={"program": "echo"}, headers=HEADERS).json()["session_id"]
    for n in range(1, turns + 1):
        client.post(f"/v1/sessions/{sid}/messages", json={"text": f"message {n}"}, headers=HEADERS)
    return sid


def test_the_api_returns_one_turn_or_a_page_with_a_cursor(client):
    sid = _session_with_turns(client, 30)
    whole = []
    after, pages = 0, 0
    while after is not None:
        page = client.get(f"/v1/sessions/{sid}/trace?limit=25&after={after}", headers=HEADERS).json()
        assert len(page["events"]) <= 25 and page["turns"] == 30
        whole.extend(page["events"])
        after, pages = page["next"], pages + 1
    assert pages > 2 and [e["seq"] for e in whole] == list(range(1, len(whole) + 1))
    one = client.get(f"/v1/sessions/{sid}/trace?turn=17", headers=HEADERS).json()
    assert {e["turn"] for e in one["events"]} == {17} and one["next"] is None
    assert [e["data"]["text"] for e in one["events"] if e["type"] == "user_message"] == ["message 17"]
    assert one["events"] == [e for e in whole if e["turn"] == 17]
    span = client.get(f"/v1/sessions/{sid}/trace?from_turn=28&to_turn=29", headers=HEADERS).json()
    assert {e["turn"] for e in span["events"]} == {28, 29}
    assert client.get(f"/v1/sessions/{sid}/trace?turn=99", headers=HEADERS).json()["events"] == []


def test_the_default_page_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr("frontdesk.server.app.TRACE_PAGE", 10)  # read when the app declares its routes
    client = _client(tmp_path)
    sid = _session_with_turns(client, 8)
    page = client.get(f"/v1/sessions/{sid}/trace", headers=HEADERS).json()
    assert len(page["events"]) == 10 and page["next"] == 10
    rest = client.get(f"/v1/sessions/{sid}/trace?after=10&limit=5000", headers=HEADERS).json()
    assert rest["next"] is None and rest["events"][0]["seq"] == 11


@pytest.mark.parametrize("query", ["turn=-1", "limit=0", "limit=999999", "after=-3", "from_turn=5&to_turn=2",
                                   "turn=2&from_turn=1", "turn=x"])
def test_a_bad_trace_query_is_a_422_with_a_reason(client, query):
    sid = _session_with_turns(client, 1)
    response = client.get(f"/v1/sessions/{sid}/trace?{query}", headers=HEADERS)
    assert response.status_code == 422 and response.json().get("error")


def test_frontdesk_trace_turn_prints_only_those_turns(tmp_path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(ECHO), encoding="utf-8")
    db = tmp_path / "sessions.sqlite3"
    runner = CliRunner()
    lines = "\n".join(f"line {n}" for n in range(1, 7)) + "\n"
    result = runner.invoke(cli_app, ["chat", str(tmp_path), "--store", str(db), "--llm", "none", "--no-embeddings",
                                     "--no-embeddings"], input=lines)
    assert result.exit_code == 0, result.output
    [session] = [info.id for info in SqliteSessionStore(str(db)).list_sessions()]
    shown = runner.invoke(cli_app, ["trace", session, "--store", str(db), "--turn", "3-4", "--json"])
    assert shown.exit_code == 0, shown.output
    events = [json.loads(line) for line in shown.output.splitlines() if line.startswith("{")]
    assert events and {e["turn"] for e in events} == {3, 4}
    assert [e["data"]["text"] for e in events if e["type"] == "user_message"] == ["line 3", "line 4"]
    bad = runner.invoke(cli_app, ["trace", session, "--store", str(db), "--turn", "5-2"])
    assert bad.exit_code == 2 and "--turn" in bad.output
