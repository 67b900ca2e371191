"""The web chat page (frontdesk.server.web) in a real browser: Playwright drives Debian's Chromium
against the HTTP API served by uvicorn on a loopback port."""

from __future__ import annotations

import os
import re
import shutil
import socket
import textwrap
import threading
import time
import warnings
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

CHROMIUM = Path("/usr/bin/chromium")
try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    pytest.skip("playwright is not importable (pip install playwright; the browser is Debian's chromium)",
                allow_module_level=True)
if not CHROMIUM.exists():  # pragma: no cover - depends on the machine
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium); the browser tests need it",
                allow_module_level=True)

import uvicorn  # noqa: E402

from frontdesk.lang import load_program  # noqa: E402
from frontdesk.server.app import create_app  # noqa: E402
from frontdesk.server.auth import ServerSettings  # noqa: E402
from frontdesk.server.web import mount_web  # noqa: E402
from frontdesk.store.memory import MemorySessionStore  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HOTEL = ROOT / "examples" / "hotel_booking"
TOKEN = "alice-token"
WAIT = 20_000  # ms: generous waits for anything the page does after a request
expect.set_options(timeout=WAIT)

# An ADL program whose bot text is markup: the page must show it as text.
MARKUP = """
main:
  type: flow agent
  steps:
    - bot: '<b>hi</b> there <img src=x onerror="window.__pwned=1">'
    - user
    - bot: '<script>window.__pwned=2</script>second <i>reply</i>'
    - user
    - bot: "third"
    - user
    - bot: "fourth"
    - user
"""

# An ADL program that answers every message: a long session.
ECHO = """
main:
  type: flow agent
  steps:
    - label: again
    - user
    - bot: "Noted."
    - next: again
"""

# An ABL agent whose message carries a button and a select.
PICKER = """AGENT: Picker
GOAL: "Let the user pick"

FLOW:
  choose:
    REASONING: false
    RESPOND: "Pick a city or an option:"
      ACTIONS:
        - BUTTON: "Option A"
          ID: option_a
          VALUE: "a"
        - SELECT: "Departure City"
          ID: departure
          OPTIONS:
            - { id: "NYC", label: "New York" }
            - { id: "LAX", label: "Los Angeles" }
    GATHER:
      - note: required
    THEN: done

  done:
    REASONING: false
    RESPOND: "You said {{note}}."
    THEN: COMPLETE
"""


def _load(path: Path):
    program, diags = load_program(path)
    assert program is not None, [d.format() for d in diags]
    return program


def _offers_buttons(program) -> bool:
    """Whether the hotel agent's "Shall I book it?" message carries its buttons."""
    nodes = program.agents["Hotel_Booking"].graph.nodes.values()
    return any("Shall I book it?" in str(getattr(n, "text", "")) and getattr(n, "actions", None) for n in nodes)


def _hotel(tmp: Path):
    """examples/hotel_booking. Its confirm step lists the ACTIONS (the "Yes, book it" and "No"
    buttons) beside the RESPOND; while the ABL compiler reads ACTIONS only inside a RESPOND (beside it
    they are kept as data and no button is sent), the test runs a copy with them moved into it."""
    program = _load(HOTEL)
    if _offers_buttons(program):
        return program
    copy = tmp / "hotel_booking"
    shutil.copytree(HOTEL, copy)
    agent = copy / "hotel_booking.agent.abl"
    text = agent.read_text(encoding="utf-8")
    nested = re.sub(r"(?m)^(    ACTIONS:\n(?:      .*\n)+)", lambda m: textwrap.indent(m.group(1), "  "), text)
    agent.write_text(nested, encoding="utf-8")
    program = _load(copy)
    assert _offers_buttons(program), "the hotel example's offer has no buttons even with ACTIONS in its RESPOND"
    warnings.warn("examples/hotel_booking: the confirm step's ACTIONS sit beside RESPOND and send no buttons; "
                  "the browser test uses a copy with them inside the RESPOND", UserWarning)
    return program


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    db_dir = tmp_path_factory.mktemp("example-db")
    before = os.environ.get("FRONTDESK_EXAMPLE_DB_DIR")
    os.environ["FRONTDESK_EXAMPLE_DB_DIR"] = str(db_dir)
    markup = tmp_path_factory.mktemp("markup")
    (markup / "agents.yml").write_text(textwrap.dedent(MARKUP), encoding="utf-8")
    picker = tmp_path_factory.mktemp("picker")
    (picker / "picker.agent.abl").write_text(PICKER, encoding="utf-8")
    echo = tmp_path_factory.mktemp("echo")
    (echo / "agents.yml").write_text(textwrap.dedent(ECHO), encoding="utf-8")
    yield {"hotel": _hotel(tmp_path_factory.mktemp("examples")), "markup": _load(markup), "picker": _load(picker),
           "echo": _load(echo)}
    if before is None:
        os.environ.pop("FRONTDESK_EXAMPLE_DB_DIR", None)
    else:
        os.environ["FRONTDESK_EXAMPLE_DB_DIR"] = before


def make_app(programs):
    settings = ServerSettings(tokens={TOKEN: "alice"}, max_message_chars=500)
    app = create_app(programs, MemorySessionStore(), None, settings)
    mount_web(app)
    mount_web(app)  # idempotent: the second call adds nothing
    return app


class LoopbackServer:
    """uvicorn serving an app on 127.0.0.1 (a free port) in a background thread."""

    def __init__(self, app) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off",
                                timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> "LoopbackServer":
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.sock.close()


@pytest.fixture(scope="module")
def server(programs):
    with LoopbackServer(make_app(programs)) as running:
        yield running


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture()
def page(browser, server):
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    context.set_default_timeout(WAIT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.url + "/")
    expect(page.locator("body")).to_have_attribute("data-ready", "true", timeout=WAIT)
    yield page
    context.close()
    assert errors == [], f"the page raised: {errors}"


# ---- helpers --------------------------------------------------------------------------------------

def connect(page, token: str = TOKEN) -> None:
    page.fill("#token-input", token)
    page.click("#token-save")


def start(page, program: str) -> str:
    connect(page)
    expect(page.locator("#program-select")).to_be_enabled(timeout=WAIT)
    page.select_option("#program-select", program)
    page.click("#start-button")
    # (no wait_for_function: the page's Content-Security-Policy forbids evaluating strings)
    expect(page.locator("body")).to_have_attribute("data-session-id", re.compile(r"\S"))
    return page.locator("body").get_attribute("data-session-id")


def say(page, text: str) -> None:
    box = page.locator("#message-input")
    expect(box).to_be_enabled(timeout=WAIT)
    box.fill(text)
    box.press("Enter")


def bot(page, text: str):
    return page.locator(".msg.bot:not(.provisional)", has_text=text)


def trace_rows(page, kind: str):
    return page.locator(f"#trace-list .ev[data-type='{kind}']")


# ---- the page is served -------------------------------------------------------------------------

def test_mount_web_serves_the_page_and_assets_once(programs):
    app = make_app(programs)
    assert [r.path for r in app.routes if getattr(r, "path", None) == "/"] == ["/"]
    assert len([r for r in app.routes if getattr(r, "path", None) == "/static"]) == 1
    client = TestClient(app)
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert '<script src="/static/app.js"' in page.text and 'id="trace-panel"' in page.text
    assert "http://" not in page.text and "https://" not in page.text  # nothing from elsewhere
    for name, kind in [("app.js", "javascript"), ("style.css", "text/css")]:
        asset = client.get(f"/static/{name}")
        assert asset.status_code == 200 and kind in asset.headers["content-type"], name
        assert ".innerHTML" not in asset.text and "insertAdjacentHTML" not in asset.text, name
    assert client.get("/static/nothing.js").status_code == 404
    assert client.get("/v1/programs").status_code == 401  # the API still wants its token


# ---- in the browser -------------------------------------------------------------------------------

def test_a_hotel_booking_with_buttons_agents_and_traces(page, tmp_path):
    start(page, "hotel")
    first = bot(page, "Where would you like to stay?")
    expect(first).to_be_visible()
    expect(first.locator(".agent-name")).to_have_text("Hotel_Booking")
    expect(page.locator("#status")).to_have_text("live", timeout=WAIT)

    say(page, "Lisbon")
    expect(bot(page, "When do you check in?")).to_be_visible()
    say(page, "2030-03-02")
    expect(bot(page, "And when do you check out?")).to_be_visible()
    say(page, "2030-03-06")
    expect(bot(page, "How many guests?")).to_be_visible()
    say(page, "2 guests")
    offer = bot(page, "Shall I book it?")
    expect(offer).to_be_visible()
    expect(offer.locator(".bubble")).to_contain_text("Casa do Rio in Lisbon")
    buttons = offer.locator(".actions .action-button")
    expect(buttons).to_have_text(["Yes, book it", "No"])

    buttons.filter(has_text="Yes, book it").click()
    expect(page.locator(".msg.user .bubble").last).to_have_text("yes")
    expect(bot(page, "Reserved: booking HB-")).to_be_visible()
    card = bot(page, "16-digit card")
    expect(card).to_be_visible()
    expect(card.locator(".agent-name")).to_have_text("Payment")
    expect(page.locator(".note", has_text="Payment took over")).to_be_visible()
    expect(buttons.first).to_be_disabled()  # a used message's buttons are retired
    expect(page.locator("#chat-sub")).to_contain_text("with Payment")

    # the trace of the "2 guests" turn: extraction, flow steps, conditions and the search
    page.click("[data-trace-turn='4']")
    panel = page.locator("#trace-panel")
    expect(panel).to_be_visible()
    expect(page.locator("#trace-title")).to_have_text("Turn 4")
    expect(trace_rows(page, "gather_extraction")).to_contain_text("guests=2")
    expect(trace_rows(page, "flow_transition").first).to_contain_text("collect → search")
    expect(trace_rows(page, "condition_evaluated").filter(has_text="offer.total > 0")).to_contain_text("true")
    search = trace_rows(page, "tool_call")
    expect(search).to_contain_text("search_hotels(destination=Lisbon")
    expect(search.locator(".ev-dur")).to_contain_text("ms")
    expect(trace_rows(page, "tool_result")).to_contain_text("Casa do Rio")
    expect(page.locator("#trace-summary")).to_contain_text("tool calls1")
    expect(trace_rows(page, "arg_set")).to_have_count(0)  # detail events wait for "show every event"
    page.check("#trace-all")
    expect(trace_rows(page, "arg_set").first).to_be_visible()

    # the button's turn: the booking and the handoff to Payment
    page.click("[data-trace-turn='5']")
    expect(page.locator("#trace-title")).to_have_text("Turn 5")
    expect(trace_rows(page, "user_message")).to_contain_text("yes")
    expect(trace_rows(page, "tool_call")).to_contain_text("book_hotel(")
    expect(trace_rows(page, "agent_started")).to_contain_text("Payment")
    expect(page.locator("#trace-summary")).to_contain_text("Hotel_Booking → Payment")
    page.screenshot(path=str(tmp_path / "webchat.png"))
    assert (tmp_path / "webchat.png").stat().st_size > 0

    page.click("#trace-close")
    expect(panel).to_be_hidden()


def test_a_select_sends_the_option_id(page):
    start(page, "picker")
    message = bot(page, "Pick a city or an option:")
    expect(message.locator(".action-button")).to_have_text(["Option A"])
    select = message.locator("select.action-select")
    expect(select.locator("option")).to_have_text(["Departure City…", "New York", "Los Angeles"])
    select.select_option("LAX")
    expect(page.locator(".msg.user .bubble").last).to_have_text("LAX")
    expect(bot(page, "You said LAX.")).to_be_visible()
    expect(page.locator("#status")).to_have_text("ended")  # the agent completed: the session is over
    expect(page.locator("#message-input")).to_be_disabled()


def test_markup_in_bot_and_user_text_is_shown_as_text(page):
    start(page, "markup")
    raw = '<b>hi</b> there <img src=x onerror="window.__pwned=1">'
    expect(page.locator(".msg.bot .bubble").first).to_have_text(raw)
    hostile = "<script>window.__pwned=3</script><img src=x onerror=window.__pwned=4>"
    say(page, hostile)
    expect(page.locator(".msg.user .bubble").last).to_have_text(hostile)
    expect(bot(page, "second").locator(".bubble")).to_have_text("<script>window.__pwned=2</script>second <i>reply</i>")
    page.click("[data-trace-turn='1']")
    expect(trace_rows(page, "bot_message")).to_contain_text("<script>window.__pwned=2</script>")
    expect(trace_rows(page, "user_message")).to_contain_text(hostile)
    for tag in ("b", "i", "img", "script"):
        assert page.locator(f"#log {tag}, #trace-list {tag}").count() == 0, tag
    assert page.evaluate("window.__pwned") is None


def test_turns_run_elsewhere_arrive_through_the_follow_stream(page, server):
    session_id = start(page, "markup")
    expect(page.locator("body")).to_have_attribute("data-following", "true")
    # another client of the same account sends a message; the page did not start this turn
    reply = httpx.post(f"{server.url}/v1/sessions/{session_id}/messages", json={"text": "from elsewhere"},
                       headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert reply.status_code == 200, reply.text
    expect(page.locator(".msg.user.foreign .bubble")).to_have_text("from elsewhere")
    expect(bot(page, "second")).to_have_count(1)
    expect(page.locator("[data-trace-turn='1']")).to_be_visible()
    # and the page's own next turn is shown once, not again from the follow stream
    say(page, "mine")
    expect(bot(page, "third")).to_have_count(1)
    expect(page.locator("[data-trace-turn='2']")).to_have_count(1)
    page.click("[data-trace-turn='1']")
    expect(page.locator("#trace-sub")).to_contain_text("from elsewhere")


def test_api_errors_show_as_a_visible_notice(page):
    connect(page, "not-a-token")
    notice = page.locator("#notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("unknown token")
    expect(notice).to_contain_text("401")
    expect(page.locator("#program-select")).to_be_disabled()

    start(page, "markup")
    expect(notice).to_be_hidden()
    say(page, "x" * 600)  # longer than the server's limit: a 413 with {error, detail}
    expect(notice).to_contain_text("longer than 500 characters")
    expect(notice).to_contain_text("413")
    expect(page.locator(".msg.user.failed")).to_have_count(1)
    say(page, "short")
    expect(bot(page, "second")).to_be_visible()  # the conversation goes on


def test_a_reload_keeps_the_token_and_the_conversation(page):
    start(page, "markup")
    say(page, "hello")
    expect(bot(page, "second")).to_be_visible()
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(page.locator("#token-input")).to_have_value(TOKEN)
    expect(page.locator(".note", has_text="Conversation restored")).to_be_visible()
    expect(page.locator(".msg.user .bubble")).to_have_text(["hello"])
    expect(bot(page, "second")).to_be_visible()
    say(page, "again")
    expect(bot(page, "third")).to_be_visible()


def test_a_long_session_comes_back_with_its_last_turns_only(page, server):
    session_id = start(page, "echo")
    for n in range(1, 61):  # sent elsewhere: 60 turns
        reply = httpx.post(f"{server.url}/v1/sessions/{session_id}/messages", json={"text": f"m{n}"},
                           headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert reply.status_code == 200, reply.text
    expect(page.locator(".msg.user .bubble").last).to_have_text("m60")
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url) if "/trace" in request.url else None)
    page.reload()
    expect(page.locator(".note", has_text="Conversation restored")).to_be_visible()
    expect(page.locator(".note", has_text="11 earlier turns not shown")).to_be_visible()
    expect(page.locator(".msg.user .bubble").first).to_have_text("m11")
    expect(page.locator(".msg.user .bubble")).to_have_count(50)
    assert asked and all(re.search(r"[?&](limit=1|from_turn=11)\b", url) for url in asked), asked
    page.click("[data-trace-turn='60']")
    expect(trace_rows(page, "user_message")).to_contain_text("m60")


def test_a_token_in_the_address_is_taken_and_hidden(browser, server):
    # `frontdesk serve` with no FRONTDESK_API_TOKENS prints http://host:port/#token=...
    context = browser.new_context()
    page = context.new_page()
    page.goto(server.url + "/#token=" + TOKEN)
    expect(page.locator("body")).to_have_attribute("data-ready", "true", timeout=WAIT)
    expect(page.locator("#token-input")).to_have_value(TOKEN)
    expect(page.locator("#program-select")).to_be_enabled(timeout=WAIT)
    assert "token" not in page.url
    # a conversation is started at once: Send works without clicking "New conversation" first
    expect(page.locator("body")).to_have_attribute("data-session-id", re.compile(r"\S"))
    expect(page.locator("#chat-title")).not_to_have_text("No conversation")
    expect(page.locator("#message-input")).to_be_enabled()
    expect(page.locator("#send-button")).to_be_enabled()
    context.close()
