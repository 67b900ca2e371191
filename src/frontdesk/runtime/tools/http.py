"""The HTTP binding: a tool call as a request to a service, its response as the tool's value.

Errors are results, never exceptions: a timeout, an unreachable service, an error status, a
response that is too long or cannot be read. Credentials come from the environment when the call is
made (see HttpBinding), only from variables the operator grants (`frontdesk.access`: a refused one is a
`config` error naming the variable, never its value); every text taken from the environment and every
credential header value is
blanked out of the result and of the error texts, so a service that echoes them back, or an error
that quotes the url, does not put them into the session or the trace.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from frontdesk.access import EnvRefused, ProgramEnvironment, program_environment
from frontdesk.ir.models import HttpBinding, ToolDef, is_secret_header

from .python import Returned
from .result import TOO_SLOW_MESSAGE, failed, text_of

REDACTED = "[redacted]"
_HOLE = re.compile(r"\{\{\s*(env\.)?([A-Za-z_]\w*)\s*\}\}|\{(env\.)?([A-Za-z_]\w*)\}")
_MIN_SECRET = 4  # shorter texts are not blanked out (they would mangle everything)
_NO_ARGS_IN_QUERY = ("POST", "PUT", "PATCH")


class _Unusable(Exception):
    """The request cannot be made: `kind` is bad_arguments or config."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Request:
    """One request being built from a binding and a call's arguments."""

    def __init__(self, tool: str, args: dict[str, Any], env: ProgramEnvironment, declared: set[str]) -> None:
        self.tool = tool
        self.args = args
        self.declared = declared  # the tool's parameters (empty: it declares none, any argument goes)
        self.env = env
        self.used: set[str] = set()  # arguments a template took
        self.secrets: set[str] = set()

    def _hole(self, match: re.Match) -> tuple[bool, str]:
        env = match.group(1) or match.group(3)
        name = match.group(2) or match.group(4)
        return bool(env), name

    def _env(self, name: str) -> str:
        try:
            value = self.env.read(name)
        except EnvRefused as exc:
            raise _Unusable("config", str(exc)) from None
        if value is None:
            raise _Unusable("config", f"the environment variable {name} is not set")
        if len(value) >= _MIN_SECRET:
            self.secrets.add(value)
        return value

    def exact(self, template: str) -> tuple[bool, Any]:
        """(True, the typed value) when the template is one hole alone, else (False, None)."""
        match = _HOLE.fullmatch(template.strip())
        if match is None:
            return False, None
        is_env, name = self._hole(match)
        if is_env:
            return True, self._env(name)
        self.used.add(name)
        return True, self.args.get(name)

    def fill(self, template: str, in_url: bool = False) -> str:
        def one(match: re.Match) -> str:
            is_env, name = self._hole(match)
            if is_env:
                return self._env(name)
            self.used.add(name)
            value = self.args.get(name)
            if value is None:
                if in_url:
                    raise _Unusable("bad_arguments", f"{self.tool} needs {name} but got no value for it")
                return ""
            text = _as_text(value)
            return quote(text, safe="") if in_url else text

        return _HOLE.sub(one, template)

    def fill_data(self, template: Any) -> Any:
        """A body template: every string filled (one hole alone: its typed value), the rest kept."""
        if isinstance(template, str):
            whole, value = self.exact(template)
            return value if whole else self.fill(template)
        if isinstance(template, dict):
            return {key: self.fill_data(value) for key, value in template.items()}
        if isinstance(template, list):
            return [self.fill_data(value) for value in template]
        return template

    def unused(self) -> dict[str, Any]:
        """The arguments no template took, that have a value and that the tool declares."""
        return {k: v for k, v in self.args.items()
                if k not in self.used and v is not None and (not self.declared or k in self.declared)}


def _structured(template: Any) -> Any:
    """A body written as JSON text (ABL `body_template: |` with an object or a list) as that data, so its
    strings are filled one by one and it goes out as JSON, not as one quoted string; other text stays
    text (a template whose holes are not inside JSON strings, a plain-text body)."""
    if isinstance(template, str) and template.strip()[:1] in ("{", "["):
        try:
            return json.loads(template)
        except ValueError:
            return template
    return template


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return text_of(value)


class HttpCalls:
    """Makes the requests of HTTP-bound tools with one connection pool (`client`, made when first
    needed unless given); environment variables are read from `env` (default: the process's
    environment, as far as the operator grants it; a mapping: those values, which the caller chose)."""

    def __init__(self, env: Mapping[str, str] | ProgramEnvironment | None = None,
                 client: httpx.Client | None = None) -> None:
        self.env = program_environment(env)
        self._client = client
        self._own_client = client is None
        self._lock = threading.Lock()

    @property
    def client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(follow_redirects=False, headers={"User-Agent": "frontdesk"})
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None and self._own_client:
                self._client.close()
                self._client = None

    def call(self, tool: ToolDef, binding: HttpBinding, args: dict[str, Any], timeout: float) -> Returned:
        request = _Request(tool.name, args, self.env, {p.name for p in tool.params})
        missing = [p.name for p in tool.params if p.required and args.get(p.name) is None]
        if missing:
            text = f"{tool.name} needs {', '.join(missing)} but got no value for it"
            return Returned(failure=failed("bad_arguments", text, message=text))
        try:
            url, kwargs = self._build(request, binding)
        except _Unusable as exc:
            text = _redacted(f"{tool.name}: {exc}", request.secrets)
            if exc.kind == "bad_arguments":
                return Returned(failure=failed("bad_arguments", text, message=str(exc)))
            return Returned(failure=failed("config", text))
        shown = _redacted(_without_query(url), request.secrets)
        where = f"{binding.method} {shown}"
        try:
            status, reason, content_type, encoding, body = self._send(binding, url, kwargs, timeout)
        except _TooLarge as exc:
            return Returned(failure=failed("too_large", f"{tool.name}: the response of {where} is longer than "
                                           f"{binding.max_response_bytes:,} bytes ({exc})"))
        except (httpx.TimeoutException, _Late):
            return Returned(failure=failed("timeout", f"{tool.name} did not answer within {timeout:g} seconds "
                                           f"({where})", TOO_SLOW_MESSAGE))
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            return Returned(failure=failed("config", _redacted(f"{tool.name}: cannot request {where}: {exc}",
                                                               request.secrets)))
        except httpx.HTTPError as exc:
            return Returned(failure=failed("connection", _redacted(
                f"{tool.name}: {where} could not be reached: {type(exc).__name__}: {exc}", request.secrets)))
        except Exception as exc:  # noqa: BLE001 - a request that breaks is a failing tool
            return Returned(failure=failed("raised", _redacted(
                f"{tool.name}: {where} failed: {type(exc).__name__}: {exc}", request.secrets)))
        if status >= 300:
            snippet = _redacted(body[:300].decode(encoding or "utf-8", errors="replace").strip(), request.secrets)
            detail = f"{tool.name}: {where} answered {status} {reason}".rstrip()
            return Returned(failure=failed("http_status", detail + (f": {snippet}" if snippet else ""),
                                           status_code=status))
        try:
            value = _read_body(body, content_type, encoding)
        except ValueError as exc:
            return Returned(failure=failed("bad_result", f"{tool.name}: {where} answered with JSON that cannot be "
                                           f"read: {exc}"))
        return Returned(value=_redact_value(value, request.secrets))

    def _build(self, request: _Request, binding: HttpBinding) -> tuple[str, dict[str, Any]]:
        url = request.fill(binding.url, in_url=True)
        headers = {}
        for name, template in binding.headers.items():
            value = request.fill(template)
            if is_secret_header(name) and len(value) >= _MIN_SECRET:
                request.secrets.add(value)
            headers[name] = value
        query: dict[str, Any] = {}
        if binding.query is None:
            if binding.method not in _NO_ARGS_IN_QUERY:
                query = request.unused()
                request.used.update(query)
        else:
            for key, template in binding.query.items():
                whole, value = request.exact(template)
                value = value if whole else request.fill(template)
                if value is not None:
                    query[key] = value
        query = {k: _as_text(v) if isinstance(v, (dict, list)) else v for k, v in query.items()}
        kwargs: dict[str, Any] = {"headers": headers, "params": query}
        if binding.body is not None:
            body = request.fill_data(_structured(binding.body))
        elif binding.method in _NO_ARGS_IN_QUERY:
            body = request.unused()
        else:
            body = None
        if body is not None:
            if binding.body_format == "form" and isinstance(body, dict):
                kwargs["data"] = {k: _as_text(v) for k, v in body.items() if v is not None}
            else:
                kwargs["json"] = body
        return url, kwargs

    def _send(self, binding: HttpBinding, url: str, kwargs: dict[str, Any],
              timeout: float) -> tuple[int, str, str, str | None, bytes]:
        deadline = time.monotonic() + timeout
        limit = binding.max_response_bytes
        with self.client.stream(binding.method, url, timeout=httpx.Timeout(timeout), **kwargs) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise _TooLarge(f"it declares {int(declared):,}")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():  # decoded (gzip...): the cap is on what is kept
                size += len(chunk)
                if size > limit:
                    raise _TooLarge(f"more than {size:,} bytes came")
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise _Late()
            return (response.status_code, response.reason_phrase, response.headers.get("content-type", ""),
                    response.charset_encoding, b"".join(chunks))


class _TooLarge(Exception):
    pass


class _Late(Exception):
    pass


def _read_body(body: bytes, content_type: str, encoding: str | None) -> Any:
    """JSON data when the response says it is JSON, else its text; None for an empty body."""
    if not body.strip():
        return None
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        return json.loads(body.decode(encoding or "utf-8", errors="replace"))
    return body.decode(encoding or "utf-8", errors="replace")


def _without_query(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def _redacted(text: str, secrets: set[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
        encoded = quote(secret, safe="")
        if encoded != secret:
            text = text.replace(encoded, REDACTED)
    return text


def _redact_value(value: Any, secrets: set[str]) -> Any:
    if not secrets:
        return value
    if isinstance(value, str):
        return _redacted(value, secrets)
    if isinstance(value, dict):
        return {_redacted(str(k), secrets): _redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(v, secrets) for v in value]
    return value
