"""The web chat page and trace viewer: a static page over the HTTP API (/v1).

`mount_web(app)` adds `GET /` (the page) and `/static/...` (its script and style sheet). The page
itself needs no token: it asks the user for an API token, keeps it in the browser's localStorage and
sends it as `Authorization: Bearer <token>` on every API call. Nothing is fetched from elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).resolve().parent / "static"

# The page runs only its own script and style sheet and talks only to this server: bot and user text
# is written with textContent, and this policy is the second line against injected markup.
PAGE_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def mount_web(app: FastAPI) -> None:
    """Serve the chat page at `/` and its assets at `/static/{name}`; calling it again does nothing."""
    if getattr(app.state, "web_mounted", False):
        return
    app.state.web_mounted = True

    @app.get("/", include_in_schema=False)
    async def chat_page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
