"""Fetching web pages for `url` sources: the `Fetcher` seam, the HTTP one, and the one used when fetching is off."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

# Web pages bigger than this are cut off with a problem.
MAX_DOWNLOAD_BYTES = 10 * 1024 * 1024
DEFAULT_TIMEOUT = 5.0

_USER_AGENT = "frontdesk-kb/0.1 (+knowledge-base loader)"


@dataclass
class FetchedPage:
    """The raw answer for one address: `url` is the address asked for (normalised), `final_url` where
    redirects ended; `content_type` is the lower-case media type without parameters ("" if unknown)."""

    url: str
    data: bytes
    content_type: str = ""
    charset: str | None = None
    final_url: str = ""
    truncated: bool = False  # the page was longer than MAX_DOWNLOAD_BYTES; `data` is its start


@dataclass
class FetchError:
    """Why a page could not be fetched, as a sentence for the author."""

    message: str


@runtime_checkable
class Fetcher(Protocol):
    """Turns the `location` of a `url` source into the page's bytes, or a problem; never raises.

    `online` says whether pages are really fetched: an index cache keys web sources by their
    fetched text only then.
    """

    online: bool

    def fetch(self, location: str) -> FetchedPage | FetchError: ...


def normalise_url(location: str) -> str:
    """`www.example.com/help` -> `https://www.example.com/help`; URLs with a scheme are kept."""
    location = location.strip()
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.\-]*://", location):
        return location
    if location.startswith("//"):
        return "https:" + location
    return "https://" + location


def _connect_reason(error: Exception) -> str:
    text = str(error)
    lowered = text.lower()
    if "refused" in lowered:
        return "connection refused"
    if any(s in lowered for s in ("name or service not known", "nodename nor servname", "name resolution", "getaddrinfo")):
        return "the host name could not be resolved"
    if "unreachable" in lowered:
        return "the network is unreachable"
    return text or type(error).__name__


class HttpFetcher:
    """Fetches pages over http(s) with httpx: redirects followed, `timeout` seconds, at most MAX_DOWNLOAD_BYTES."""

    online = True

    def __init__(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.timeout = timeout

    def fetch(self, location: str) -> FetchedPage | FetchError:
        import httpx

        timeout = self.timeout
        url = normalise_url(location)
        if not url.lower().startswith(("http://", "https://")):
            return FetchError(f"could not fetch {location}: only http:// and https:// addresses are supported")
        try:
            with (
                httpx.Client(follow_redirects=True, timeout=timeout, headers={"User-Agent": _USER_AGENT}) as client,
                client.stream("GET", url) as response,
            ):
                if response.status_code >= 400:
                    phrase = response.reason_phrase or ""
                    return FetchError(
                        f"could not fetch {url}: the server answered {response.status_code} {phrase}".rstrip()
                    )
                body = bytearray()
                truncated = False
                for piece in response.iter_bytes():
                    body.extend(piece)
                    if len(body) > MAX_DOWNLOAD_BYTES:
                        truncated = True
                        break
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                charset = response.charset_encoding
                final_url = str(response.url)
        except httpx.TimeoutException:
            return FetchError(f"could not fetch {url}: no answer within {timeout:g} seconds (is the machine online?)")
        except httpx.ConnectError as error:
            return FetchError(f"could not fetch {url}: {_connect_reason(error)} (is the machine online?)")
        except httpx.TooManyRedirects:
            return FetchError(f"could not fetch {url}: too many redirects")
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as error:
            return FetchError(f"could not fetch {location}: not a valid web address ({error})")
        except httpx.HTTPError as error:
            return FetchError(f"could not fetch {url}: {error or type(error).__name__}")
        except Exception as error:  # noqa: BLE001 - anything odd in the network stack is a problem, not a crash
            return FetchError(f"could not fetch {url}: {error or type(error).__name__}")
        return FetchedPage(url=url, data=bytes(body), content_type=content_type, charset=charset,
                           final_url=final_url, truncated=truncated)


class NoFetcher:
    """Fetching web pages is turned off: every `url` source is a problem saying so."""

    online = False

    def fetch(self, location: str) -> FetchedPage | FetchError:
        return FetchError(f"did not fetch {location}: fetching web pages is turned off")


def default_fetcher(fetch_urls: bool = True, timeout: float = DEFAULT_TIMEOUT) -> Fetcher:
    """The fetcher the `fetch_urls` switch stands for: HTTP with `timeout`, or none."""
    return HttpFetcher(timeout) if fetch_urls else NoFetcher()
