"""Tool bindings (issue 8): a tool is a contract (params, returns) plus what answers it: a Python
function, an HTTP endpoint (here a real server on a local socket) or a stub. A result is a value or a
typed error; ADL's return convention is a reader the ADL front end registers."""

from __future__ import annotations

import json
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from pydantic import ValidationError

from frontdesk.ir.models import (
    HttpBinding,
    Program,
    PythonBinding,
    StubAnswer,
    StubBinding,
    ToolDef,
    ToolParam,
    ToolSettings,
)
from frontdesk.runtime.tools import (
    TOO_SLOW_MESSAGE,
    UNAVAILABLE_MESSAGE,
    ProgramToolRunner,
    PythonToolRunner,
    StubToolRunner,
    ToolError,
    ToolResult,
    register_return_convention,
    return_convention,
    schema_problem,
)

API_KEY = "sk-test-0123456789abcdef"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep the test output quiet
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data) -> None:
        self._send(status, json.dumps(data).encode("utf-8"))

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path.startswith("/orders/"):
            self._json(200, {"id": url.path.rsplit("/", 1)[1], "state": "shipped", "query": query})
        elif url.path == "/echo-auth":
            self._json(200, {"seen": self.headers.get("Authorization"), "key": self.headers.get("X-API-Key"),
                             "note": f"you sent {self.headers.get('Authorization')}"})
        elif url.path == "/deny":
            self._send(401, f"bad credentials: {self.headers.get('Authorization')}".encode(), "text/plain")
        elif url.path == "/slow":
            time.sleep(2)
            self._json(200, {"late": True})
        elif url.path == "/big":
            self._send(200, b"x" * 300_000, "text/plain")
        elif url.path == "/text":
            self._send(200, "plain words, caf\u00e9".encode(), "text/plain; charset=utf-8")
        elif url.path == "/broken-json":
            self._send(200, b"{not json", "application/json")
        else:
            self._json(404, {"error": "no such thing"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        body = json.loads(raw) if raw else None
        self._json(201, {"created": True, "path": self.path, "body": body,
                         "content_type": self.headers.get("Content-Type")})


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def program_of(*tools: ToolDef, root: Path | str = "", settings: ToolSettings | None = None) -> Program:
    prog = Program(language="abl", tools={t.name: t for t in tools})
    if settings is not None:
        prog.settings.tools = settings
    prog.root = str(root)
    return prog


def http_tool(name: str, params=(), returns=None, **binding) -> ToolDef:
    return ToolDef(name=name, params=[ToolParam(name=p) for p in params], returns=returns or {},
                   binding=HttpBinding(**binding))


# ---- HTTP -------------------------------------------------------------------------------------


def test_get_fills_the_url_and_sends_the_other_arguments_as_the_query(server):
    tool = http_tool("get_order", ["order_id", "verbose"], url=server + "/orders/{order_id}",
                     returns={"type": "object", "required": ["state"], "properties": {"state": {"type": "string"}}})
    result = ProgramToolRunner(program_of(tool)).call("get_order", {"order_id": "A/7 x", "verbose": True})
    assert result.ok and result.error is None and result.failure is None
    assert result.value == {"id": "A%2F7%20x", "state": "shipped", "query": {"verbose": "true"}}
    assert result.args["state"] == "shipped"  # an object's fields are the record's values


def test_an_explicit_query_mapping_takes_typed_values_and_drops_missing_ones(server):
    tool = ToolDef(name="find", params=[ToolParam(name="q"), ToolParam(name="page", type="integer", required=False)],
                   binding=HttpBinding(url=server + "/orders/search",
                                       query={"term": "{q}", "p": "{page}", "lang": "en-{{env.LANG_CODE}}"}))
    runner = ProgramToolRunner(program_of(tool), env={"LANG_CODE": "GB"})
    assert runner.call("find", {"q": "kettle"}).value["query"] == {"term": "kettle", "lang": "en-GB"}
    assert runner.call("find", {"q": "kettle", "page": 2}).value["query"]["p"] == "2"


def test_post_sends_a_json_body_with_typed_holes(server):
    tool = http_tool("create", ["item", "count"], method="POST", url=server + "/orders",
                     body={"order": {"item": "{item}", "count": "{count}", "note": "for {item}", "fixed": [1, "{x"]}})
    result = ProgramToolRunner(program_of(tool)).call("create", {"item": "kettle", "count": 3})
    assert result.ok
    assert result.value["body"] == {"order": {"item": "kettle", "count": 3, "note": "for kettle", "fixed": [1, "{x"]}}
    assert result.value["content_type"] == "application/json"


def test_post_without_a_body_template_sends_the_arguments_as_json(server):
    tool = http_tool("create", ["item", "count"], method="POST", url=server + "/orders/{item}")
    result = ProgramToolRunner(program_of(tool)).call("create", {"item": "kettle", "count": 3, "gift": None,
                                                                 "made_up_by_the_model": "x"})
    assert result.value["path"] == "/orders/kettle" and result.value["body"] == {"count": 3}


def test_a_404_is_a_typed_http_status_error(server):
    tool = http_tool("gone", url=server + "/nothing/here")
    result = ProgramToolRunner(program_of(tool)).call("gone", {})
    assert result.status == "error" and result.message == UNAVAILABLE_MESSAGE
    assert result.failure == ToolError("http_status", result.error, status_code=404)
    assert "404" in result.error and "no such thing" in result.error


def test_a_slow_service_is_a_timeout_error_within_the_tools_limit(server):
    tool = http_tool("slow", url=server + "/slow")
    settings = ToolSettings(timeout=30, per_tool={"slow": {"timeout": 0.3}})
    started = time.monotonic()
    result = ProgramToolRunner(program_of(tool, settings=settings)).call("slow", {})
    assert time.monotonic() - started < 1.5
    assert result.failure.kind == "timeout" and result.message == TOO_SLOW_MESSAGE
    assert "0.3 seconds" in result.error
    # the binding's own timeout is used when it has one
    quick = http_tool("slow", url=server + "/slow", timeout=0.2)
    assert "0.2 seconds" in ProgramToolRunner(program_of(quick)).call("slow", {}).error


def test_an_unreachable_service_is_a_connection_error():
    tool = http_tool("down", url="http://127.0.0.1:9/nothing")
    result = ProgramToolRunner(program_of(tool), timeout=2).call("down", {})
    assert result.failure.kind == "connection" and result.message == UNAVAILABLE_MESSAGE


def test_the_api_key_never_reaches_the_result_or_the_error(server):
    headers = {"Authorization": "Bearer {env.SHOP_TOKEN}", "X-API-Key": "{{env.SHOP_KEY}}"}
    echo = http_tool("echo", url=server + "/echo-auth", headers=headers)
    deny = http_tool("deny", url=server + "/deny?key={env.SHOP_KEY}", headers=headers)
    runner = ProgramToolRunner(program_of(echo, deny), env={"SHOP_TOKEN": API_KEY, "SHOP_KEY": "k-" + API_KEY[::-1]})
    result = runner.call("echo", {})
    assert result.ok and result.value["seen"] == "[redacted]" and result.value["key"] == "[redacted]"
    assert result.value["note"] == "you sent [redacted]"
    failed = runner.call("deny", {})
    assert failed.failure.kind == "http_status" and failed.failure.status_code == 401
    for text in (json.dumps(result.value), result.for_model(), failed.error, failed.message, repr(failed)):
        assert API_KEY not in text and API_KEY[::-1] not in text
    assert "[redacted]" in failed.error


def test_a_credential_header_must_come_from_the_environment():
    with pytest.raises(ValidationError, match="take it from the environment"):
        HttpBinding(url="http://example.test/", headers={"Authorization": "Bearer " + API_KEY})
    HttpBinding(url="http://example.test/", headers={"Accept": "application/json"})  # not a credential


def test_a_missing_environment_variable_or_argument_is_a_typed_error(server):
    tool = http_tool("get_order", ["order_id"], url=server + "/orders/{order_id}",
                     headers={"Authorization": "Bearer {env.NOT_SET_ANYWHERE}"})
    runner = ProgramToolRunner(program_of(tool), env={})
    assert runner.call("get_order", {"order_id": "1"}).failure.kind == "config"
    missing = runner.call("get_order", {})
    assert missing.failure.kind == "bad_arguments" and "order_id" in missing.message


def test_text_too_large_and_unreadable_responses(server):
    text = http_tool("text", url=server + "/text")
    big = http_tool("big", url=server + "/big", max_response_bytes=100_000)
    broken = http_tool("broken", url=server + "/broken-json")
    runner = ProgramToolRunner(program_of(text, big, broken))
    words = runner.call("text", {})
    assert words.value == "plain words, caf\u00e9" and words.args == {"value": "plain words, caf\u00e9"}
    assert runner.call("big", {}).failure.kind == "too_large"
    assert runner.call("broken", {}).failure.kind == "bad_result"


def test_an_http_value_that_does_not_fit_returns_is_bad_result(server):
    tool = http_tool("get_order", ["order_id"], url=server + "/orders/{order_id}",
                     returns={"type": "object", "properties": {"state": {"type": "integer"}}})
    result = ProgramToolRunner(program_of(tool)).call("get_order", {"order_id": "1"})
    assert result.failure.kind == "bad_result" and "state is a string, not integer" in result.error
    assert result.message == UNAVAILABLE_MESSAGE and result.args == {}


def test_a_built_flow_calls_an_http_tool_through_the_engine(server):
    from frontdesk.lang import build as b
    from frontdesk.runtime.engine import Engine
    from frontdesk.store.memory import MemorySessionStore

    prog = b.program(b.flow("main", [
        b.call("get_order", "tool", order_id='"B-12"'),
        b.branch(("get_order.success", [b.say("Order ${get_order.id} is ${get_order.state}.")]),
                 otherwise=[b.say("Sorry: ${get_order.message}")]),
        b.call("gone", "tool"),
        b.branch(("gone.success", [b.say("found")]), otherwise=[b.say("Sorry: ${gone.message}")]),
    ]), tools=[b.tool("get_order", "order_id", http={"url": server + "/orders/{order_id}"}),
               b.tool("gone", http={"url": server + "/missing"})])
    result = Engine(prog, None, MemorySessionStore()).start()
    assert [m.text for m in result.messages] == ["Order B-12 is shipped.", f"Sorry: {UNAVAILABLE_MESSAGE}"]


# ---- Python -----------------------------------------------------------------------------------


def python_program(tmp_path: Path, source: str, *tools: ToolDef) -> Program:
    (tmp_path / "tools.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return program_of(*tools, root=tmp_path)


VALUE_TOOLS = """
    def quote(item):
        return {"item": item, "price": 12.5, "tags": ("new",)}

    def wrong(item):
        return {"item": item, "price": "cheap"}

    def listing():
        print("looking")
        return ["a", "b"]

    def adl_style():
        return [{"status": "error", "msg": "no stock"}, {"bot": "Sorry!"}, {"arg": "left", "value": 0}]
"""

PRICE = {"type": "object", "required": ["item", "price"],
         "properties": {"item": {"type": "string"}, "price": {"type": "number"}}}


def py_tool(name: str, convention: str = "value", returns=None, params=()) -> ToolDef:
    return ToolDef(name=name, params=[ToolParam(name=p) for p in params], returns=returns or {},
                   binding=PythonBinding(module="tools.py", function=name), convention=convention)


def test_a_value_tool_returns_its_value(tmp_path):
    prog = python_program(tmp_path, VALUE_TOOLS, py_tool("quote", returns=PRICE, params=["item"]),
                          py_tool("listing", returns={"type": "array", "items": {"type": "string"}}))
    runner = ProgramToolRunner(prog, timeout=5)
    quote = runner.call("quote", {"item": "kettle"})
    assert quote.ok and quote.value == {"item": "kettle", "price": 12.5, "tags": ["new"]}
    assert quote.args == quote.value and quote.message == ""
    listing = runner.call("listing", {})
    assert listing.value == ["a", "b"] and listing.args == {"value": ["a", "b"]} and listing.message == "looking"


def test_a_value_tool_whose_value_does_not_fit_returns_is_a_bad_result(tmp_path):
    prog = python_program(tmp_path, VALUE_TOOLS, py_tool("wrong", returns=PRICE, params=["item"]))
    result = ProgramToolRunner(prog, timeout=5).call("wrong", {"item": "kettle"})
    assert result.status == "error" and result.failure.kind == "bad_result"
    assert result.error == "wrong returned a value that does not fit its declared type: price is a string, not number"
    assert result.args == {} and result.value is None


def test_the_adl_convention_is_unchanged(tmp_path):
    prog = python_program(tmp_path, VALUE_TOOLS, py_tool("adl_style", convention="adl"))
    result = ProgramToolRunner(prog, timeout=5).call("adl_style", {})
    assert (result.status, result.message, result.bot, result.args) == ("error", "no stock", ["Sorry!"], {"left": 0})
    assert result.failure is None and result.error is None  # an error status is the tool's answer
    from frontdesk.lang.adl.returns import read_adl_return
    assert return_convention("adl") is read_adl_return


def test_the_module_shorthand_is_a_python_binding_in_the_adl_convention(tmp_path):
    tool = ToolDef(name="adl_style", module="tools.py")
    assert tool.binding == PythonBinding(module="tools.py", function="adl_style")
    assert tool.convention == "adl" and tool.module == "tools.py"
    assert ToolDef.model_validate_json(tool.model_dump_json()) == tool
    prog = python_program(tmp_path, VALUE_TOOLS, tool)
    assert PythonToolRunner(prog, timeout=5).call("adl_style", {}).bot == ["Sorry!"]


def test_python_failures_are_typed(tmp_path):
    prog = python_program(tmp_path, """
        import time

        def boom():
            raise ValueError("database down")

        def slow():
            time.sleep(5)

        def needs(x):
            return x
    """, py_tool("boom"), py_tool("slow"), py_tool("needs"), py_tool("absent"))
    runner = ProgramToolRunner(prog, timeout=0.3)
    kinds = {name: runner.call(name, {}).failure.kind for name in ("boom", "slow", "needs", "absent", "nope")}
    assert kinds == {"boom": "raised", "slow": "timeout", "needs": "bad_arguments", "absent": "not_found",
                     "nope": "not_found"}


def test_adl_programs_get_python_bindings(tmp_path):
    from frontdesk.lang import load_program

    folder = tmp_path / "prog"
    folder.mkdir()
    (folder / "agents.yml").write_text("main:\n  type: flow agent\n  steps:\n    - call: adl_style\n",
                                       encoding="utf-8")
    (folder / "tools.py").write_text(textwrap.dedent(VALUE_TOOLS), encoding="utf-8")
    prog, _ = load_program(folder)
    tool = prog.tools["adl_style"]
    assert tool.binding == PythonBinding(module="tools.py", function="adl_style") and tool.convention == "adl"


# ---- stubs, conventions, schema ---------------------------------------------------------------


def test_a_stub_binding_answers_from_its_table():
    tool = ToolDef(name="stock", params=[ToolParam(name="item")], returns={"type": "object"},
                   binding=StubBinding(answers=[StubAnswer(when={"item": "kettle"}, value={"count": 3}),
                                                StubAnswer(when={"item": "toaster"}, error="warehouse offline"),
                                                StubAnswer(value={"count": 0})]))
    runner = ProgramToolRunner(program_of(tool, ToolDef(name="unbound")))
    assert runner.call("stock", {"item": "kettle"}).args == {"count": 3}
    assert runner.call("stock", {"item": "mug"}).value == {"count": 0}
    offline = runner.call("stock", {"item": "toaster"})
    assert offline.failure.kind == "raised" and "warehouse offline" in offline.error
    assert runner.call("unbound", {}).failure.kind == "not_found"  # a tool with no binding is a stub with no answer


def test_the_stub_runner_keeps_its_api():
    stub = StubToolRunner({"a": [{"status": "success", "msg": "ok"}], "b": lambda n: {"n": n},
                           "c": ToolResult(status="error", message="declined")})
    assert stub.call("a", {}).message == "ok" and stub.call("b", {"n": 2}).args == {"n": 2}
    assert stub.call("c", {}).error is None and stub.call("zz", {}).failure.kind == "not_found"
    assert StubToolRunner({"v": [1, 2]}, convention="value").call("v", {}).value == [1, 2]
    assert stub.calls[0] == ("a", {})


def test_a_front_end_can_register_a_convention(tmp_path):
    register_return_convention("test_upper", lambda value: ToolResult(message=str(value).upper()))
    stub = StubToolRunner({"t": "quiet"}, convention="test_upper")
    assert stub.call("t", {}).message == "QUIET"
    with pytest.raises(LookupError):
        return_convention("no_such_convention")


def test_the_result_keeps_a_string_view_of_its_typed_error():
    result = ToolResult(status="error", message="m", failure=ToolError("timeout", "slow did not finish"))
    assert result.error == "slow did not finish" and str(result.failure) == "slow did not finish"
    legacy = ToolResult(status="error", error="it broke")
    assert legacy.failure == ToolError("raised", "it broke")
    json.dumps({"error": result.error})  # still plain text for the event log


@pytest.mark.parametrize("value, schema, problem", [
    ({"a": 1}, {}, None),
    ([1, 2], {"type": "array", "items": {"type": "integer"}}, None),
    ([1, "x"], {"type": "array", "items": {"type": "integer"}}, "the value[1] is a string, not integer"),
    ({"a": True}, {"type": "object", "properties": {"a": {"type": "number"}}}, "a is a boolean, not number"),
    ({}, {"type": "object", "required": ["a"]}, "the value has no a"),
    ("2024-01-01", {"type": "date"}, None),  # a type the checker does not know accepts anything
    (None, {"type": ["string", "null"]}, None),
    ("x", {"enum": ["a", "b"]}, "the value is 'x', not one of 'a', 'b'"),
    ({"a": 1, "b": 2}, {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
     "b is not expected"),
    (3, {"anyOf": [{"type": "string"}, {"type": "integer"}]}, None),
])
def test_schema_problems(value, schema, problem):
    assert schema_problem(value, schema) == problem
