"""Operator actions need an operator token (docs/security.md, the operator): any valid token may chat,
only an operator's may reload a program; operator tokens come from FRONTDESK_OPERATOR_TOKENS or
`operator:` lines of a tokens file, and token files written before keep working."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from frontdesk.lang import load_program
from frontdesk.server.app import create_app
from frontdesk.server.auth import ServerSettings, read_tokens_file, tokens_from_file
from frontdesk.store.memory import MemorySessionStore

USER, OPERATOR = "user-token-1", "operator-token-1"


def served(tmp_path: Path, settings: ServerSettings) -> TestClient:
    folder = tmp_path / "desk"
    folder.mkdir()
    (folder / "agents.yml").write_text(textwrap.dedent("""\
        main:
          type: flow agent
          steps:
            - bot: "Hello."
            - user
        """), encoding="utf-8")
    program, diags = load_program(folder)
    assert program is not None, [d.format() for d in diags]
    return TestClient(create_app({"desk": program}, MemorySessionStore(), None, settings,
                                 sources={"desk": folder}))


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_only_an_operator_token_may_reload_a_program(tmp_path):
    client = served(tmp_path, ServerSettings(tokens={USER: "alice"}, operators={OPERATOR}))
    refused = client.post("/v1/programs/desk/reload", headers=bearer(USER))
    assert refused.status_code == 403
    assert refused.json()["error"] == "this needs an operator token"
    assert "FRONTDESK_OPERATOR_TOKENS" in refused.json()["detail"]["hint"]
    assert client.post("/v1/programs/desk/reload", headers=bearer(OPERATOR)).status_code == 200
    # the ordinary token still talks to the program, and so does the operator's
    assert client.post("/v1/sessions", json={"program": "desk"}, headers=bearer(USER)).status_code == 201
    assert client.post("/v1/sessions", json={"program": "desk"}, headers=bearer(OPERATOR)).status_code == 201
    assert client.post("/v1/programs/desk/reload").status_code == 401


def test_operator_tokens_come_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_API_TOKENS", USER)
    monkeypatch.setenv("FRONTDESK_OPERATOR_TOKENS", OPERATOR)
    client = served(tmp_path, ServerSettings.from_env())
    assert client.post("/v1/programs/desk/reload", headers=bearer(USER)).status_code == 403
    assert client.post("/v1/programs/desk/reload", headers=bearer(OPERATOR)).status_code == 200


def test_a_tokens_file_marks_operators_and_old_files_keep_working(tmp_path):
    old = tmp_path / "old.txt"
    old.write_text(f"# users\n{USER}\ncarol=carol-token\n", encoding="utf-8")
    assert tokens_from_file(old) == {USER: tokens_from_file(old)[USER], "carol-token": "carol"}
    assert read_tokens_file(old)[1] == set()
    marked = tmp_path / "tokens.txt"
    marked.write_text(f"{USER}\noperator:olga={OPERATOR}\noperator: second-op\n", encoding="utf-8")
    tokens, operators = read_tokens_file(marked)
    assert tokens[OPERATOR] == "olga" and operators == {OPERATOR, "second-op"}
    assert USER in tokens and USER not in operators
    bad = tmp_path / "bad.txt"
    bad.write_text("operator:\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.txt:1"):
        read_tokens_file(bad)
