"""Signing in from a browser: `GET /signin` shows a form taking a token, `POST /signin` checks it and keeps
it in a cookie, `POST /signout` clears the cookie.

The cookie (auth.SESSION_COOKIE) holds the token itself: HttpOnly (no script of any page reads it),
SameSite=Strict (no other site's page makes the browser send it), Secure when the server is reached over
TLS. Only the token book decides what it is worth, so a token revoked or replaced signs its browsers out
at their next page. It is a credential for reads only (GET and HEAD, auth.credential): every write needs
the Authorization header, which no other site can make a browser send, so no write can be forged across
sites. The two forms of these pages are checked besides: their Origin (or Sec-Fetch-Site) must be this
server's own (no other site can sign a browser in with its token, or out), and sign-out carries a CSRF
token derived from the cookie's token, which no other site can know.
"""
from __future__ import annotations

import hashlib
import hmac
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from infra.http.auth import SESSION_COOKIE, TokenBook
from infra.http.web import render

router = APIRouter(include_in_schema=False)
# The sign-in pages load nothing (no script, no external asset), post only to this server and are never
# framed by another page (clickjacking), nor kept in any cache.
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                                           "frame-ancestors 'none'; base-uri 'none'",
                "Cache-Control": "no-store", "Referrer-Policy": "same-origin", "X-Content-Type-Options": "nosniff"}


def csrf_token(token: str) -> str:
    """The sign-out form's CSRF token: a MAC of the cookie's token, which no other site can compute."""
    return hmac.new(token.encode(), b"toolcat sign-out", hashlib.sha256).hexdigest()


def session_of(request: Request) -> dict[str, str] | None:
    """Who the browser is signed in as (and the sign-out form's CSRF token), or None."""
    token = request.cookies.get(SESSION_COOKIE)
    book: TokenBook | None = getattr(request.app.state, "tokens", None)
    principal = book.principal(token) if token and book is not None else None
    return None if principal is None else {"name": principal.name, "csrf": csrf_token(token or "")}


def wants_page(request: Request) -> bool:
    """A browser navigating (a GET or HEAD whose Accept names HTML), not an API client."""
    return request.method in ("GET", "HEAD") and "text/html" in request.headers.get("accept", "")


def signin_redirect(request: Request) -> Response:
    """Where a browser without a (valid) sign-in goes: the sign-in page, then back here."""
    path = request.scope.get("raw_path") or request.url.path.encode()  # as sent: `agent%3Aa` stays so
    here = path.decode("latin-1") + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse("/signin?" + urlencode({"next": here}), status_code=303, headers=PAGE_HEADERS)


def _local(target: str | None) -> str:
    """`next` when it is a path on this server, else `/` (never an open redirect to another site)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")) or any(
            ord(c) < 0x20 for c in target):
        return "/"
    return target


def same_origin(request: Request) -> bool:
    """A form posted by this server's own page: browsers send Origin on every POST (and Sec-Fetch-Site);
    a client sending neither is no browser, so no other site's page."""
    origin = request.headers.get("origin")
    if origin is None:
        return request.headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")
    return origin == f"{request.url.scheme}://{request.headers.get('host', '')}"


def _signin_page(request: Request, status: int = 200, message: str | None = None, next_path: str = "/",
                 note: str | None = None) -> HTMLResponse:
    html = render("signin.html", message=message, note=note, next=next_path, session=session_of(request),
                  configured=request.app.state.tokens.configured())
    return HTMLResponse(html, status_code=status, headers=PAGE_HEADERS)


async def _form(request: Request) -> dict[str, str]:
    """The form's fields (application/x-www-form-urlencoded, all a browser sends for these forms)."""
    fields = parse_qs((await request.body()).decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0] for name, values in fields.items()}


@router.get("/signin", response_class=HTMLResponse)
def signin_form(request: Request, next: str = "/", signed_out: bool = False) -> HTMLResponse:
    page = _signin_page(request, next_path=_local(next), note="You are signed out." if signed_out else None)
    if request.cookies.get(SESSION_COOKIE) and session_of(request) is None:
        _clear(page, request)  # a token replaced or revoked: its cookie would send the browser here again
    return page


def _clear(answer: Response, request: Request) -> None:
    answer.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict",
                         secure=request.url.scheme == "https")


@router.post("/signin", response_class=HTMLResponse)
async def signin(request: Request) -> Response:
    form = await _form(request)
    next_path = _local(form.get("next"))
    if not same_origin(request):
        return _signin_page(request, 403, "Sign-in refused: the form was not sent by this server's page.",
                            next_path)
    token = form.get("token", "").strip()
    book: TokenBook = request.app.state.tokens
    principal = book.principal(token) if token else None
    if principal is None:
        message = ("Enter a token." if not token else
                   "That token is not one this server knows. Check it, or make one with "
                   "'toolcat token create NAME --scope read'.")
        return _signin_page(request, 401, message, next_path)
    if "read" not in principal.scopes:
        return _signin_page(request, 403, f"The token of '{principal.name}' lacks the 'read' scope the pages "
                                          f"need.", next_path)
    answer = RedirectResponse(next_path, status_code=303, headers=PAGE_HEADERS)
    answer.set_cookie(SESSION_COOKIE, token, path="/", httponly=True, samesite="strict",
                      secure=request.url.scheme == "https")
    return answer


@router.post("/signout")
async def signout(request: Request) -> Response:
    form, token = await _form(request), request.cookies.get(SESSION_COOKIE)
    if token and not (same_origin(request) and hmac.compare_digest(form.get("csrf", ""), csrf_token(token))):
        return HTMLResponse(render("error.html", status=403, code="forbidden",
                                   message="Sign-out refused: the form was not sent by this server's page."),
                            status_code=403, headers=PAGE_HEADERS)
    answer = RedirectResponse("/signin?signed_out=true", status_code=303, headers=PAGE_HEADERS)
    _clear(answer, request)
    return answer

