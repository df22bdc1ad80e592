"""End to end (issue 28, finding 8): with tokens configured, a browser signs in to `toolcat serve`'s web page
with a token and out again (headless Chromium driven by selenium), while API clients keep their 401
problem documents; the sign-in cookie is HttpOnly and SameSite=Strict, a credential for reads only, and
neither form can be posted by another site.
"""
from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from infra.http.auth import SESSION_COOKIE, create_token
from tests.browser import click_and_leave, driven_chromium
from tests.serving import Served, serving, tokens

HTML = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, dict[str, str]]]:
    """A server with tokens: `reader` (read), `writer` (read and write), `blind` (write only)."""
    home = tmp_path_factory.mktemp("signin") / "home"
    home.mkdir()
    keys = tokens(home, reader="read", writer="read,write", blind="write")
    with serving(home) as server:
        yield server, keys


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with driven_chromium() as driver:
        yield driver


def submit(driver: Any, form: str) -> None:
    click_and_leave(driver, driver.find_element("css selector", f"#{form} button"))


def sign_in(driver: Any, token: str) -> None:
    field = driver.find_element("id", "token")
    field.clear()
    field.send_keys(token)
    submit(driver, "signin")


@contextlib.contextmanager
def signed_in(server: Served, token: str) -> Iterator[httpx.Client]:
    """A client holding the cookie a sign-in with `token` set (as a browser would)."""
    with server.client() as client:
        answer = client.post("/signin", data={"token": token, "next": "/"})
        assert answer.status_code == 303, answer.text
        yield client


def signed_out_at(driver: Any, url: str) -> None:
    """A browser with no cookie of the server's, opening `url`."""
    driver.delete_all_cookies()
    driver.get(url)


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, page
    return found.group(1)


def test_a_browser_signs_in_sees_the_catalog_and_signs_out(served: tuple[Served, dict[str, str]],
                                                          browser: Any) -> None:
    server, keys = served
    driver = browser
    # Given no sign-in, when the browser asks for the catalog, then it is sent to the sign-in page
    signed_out_at(driver, server.url + "/")
    assert driver.current_url == server.url + "/signin?next=%2F"
    assert driver.title == "Sign in · toolcat"

    # When it signs in with the reader's token, then it sees the catalog, signed in as the reader
    sign_in(driver, keys["reader"])
    assert driver.current_url == server.url + "/"
    assert driver.find_element("tag name", "h1").text == "Tool catalog"
    assert driver.find_element("id", "signed-in-as").text == "reader"
    # and the cookie holding the token is out of the page's scripts' reach and never sent cross-site
    cookie = driver.get_cookie(SESSION_COOKIE)
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    assert driver.execute_script("return document.cookie") == ""

    # When it signs out, then the cookie is gone and the catalog asks for a sign-in again
    submit(driver, "signout")
    assert driver.find_element("id", "note").text == "You are signed out."
    assert driver.get_cookie(SESSION_COOKIE) is None
    driver.get(server.url + "/")
    assert driver.current_url.startswith(server.url + "/signin")


def test_a_wrong_token_is_refused_with_a_readable_message(served: tuple[Served, dict[str, str]],
                                                          browser: Any) -> None:
    server, keys = served
    driver = browser
    signed_out_at(driver, server.url + "/signin")
    # When a browser signs in with a token the server does not know, then it is told so, signed in as nobody
    sign_in(driver, "tc_" + "x" * 43)
    message = driver.find_element("id", "error").text
    assert message.startswith("That token is not one this server knows.")
    assert driver.get_cookie(SESSION_COOKIE) is None
    # and a token without the read scope is refused, saying which scope it lacks
    sign_in(driver, keys["blind"])
    assert "lacks the 'read' scope" in driver.find_element("id", "error").text
    assert driver.get_cookie(SESSION_COOKIE) is None


def test_signing_in_returns_to_the_page_asked_for(served: tuple[Served, dict[str, str]], browser: Any) -> None:
    server, keys = served
    driver = browser
    page = "/subjects/" + quote("agent:nobody", safe="")
    signed_out_at(driver, server.url + page)
    sign_in(driver, keys["reader"])
    assert driver.current_url == server.url + page
    assert driver.find_element("id", "error").get_attribute("data-code") == "unknown_subject"


def test_api_clients_keep_their_401_problem(served: tuple[Served, dict[str, str]]) -> None:
    server, _ = served
    with server.client() as client:
        for path in ("/", "/v1/tools"):
            answer = client.get(path)
            assert answer.status_code == 401, path
            assert answer.headers["content-type"] == "application/problem+json"
            assert answer.json()["code"] == "unauthenticated"
        # while a browser's navigation to a page is sent to sign in
        answer = client.get("/subjects/agent%3Aa", headers=HTML)
        assert answer.status_code == 303 and answer.headers["location"] == "/signin?next=%2Fsubjects%2Fagent%253Aa"


def test_the_cookie_is_a_credential_for_reads_only(served: tuple[Served, dict[str, str]]) -> None:
    server, keys = served
    # Given a browser signed in with a token holding the write scope
    with signed_in(server, keys["writer"]) as client:
        # then its cookie reads the API
        assert client.get("/v1/tools").status_code == 200
        # but writes nothing: a write needs the Authorization header, which no other site can make it send
        answer = client.post("/v1/grant/add", json={"subject": "agent:a", "target": "read"})
        assert answer.status_code == 401 and answer.json()["code"] == "unauthenticated"


def test_no_other_site_can_sign_a_browser_in_or_out(served: tuple[Served, dict[str, str]]) -> None:
    server, keys = served
    with server.client() as client:
        # The sign-in page loads nothing from elsewhere, is never framed by another page, nor cached
        page = client.get("/signin", headers=HTML)
        policy = page.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
        assert "form-action 'self'" in policy and page.headers["cache-control"] == "no-store"
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.text)
        # A sign-in form posted from another site's page is refused, and sets no cookie
        answer = client.post("/signin", data={"token": keys["reader"], "next": "/"},
                             headers={"Origin": "http://attacker.example"})
        # (refused before the form is read: no request from another site's page reaches the application)
        assert answer.status_code == 421 and "set-cookie" not in answer.headers
        answer = client.post("/signin", data={"token": keys["reader"], "next": "/"},
                             headers={"Sec-Fetch-Site": "cross-site"})
        assert answer.status_code == 403 and "set-cookie" not in answer.headers
        # and `next` never leads off this server
        answer = client.post("/signin", data={"token": keys["reader"], "next": "//attacker.example/"})
        assert answer.status_code == 303 and answer.headers["location"] == "/"
    with signed_in(server, keys["reader"]) as client:
        csrf = csrf_of(client.get("/", headers=HTML).text)
        # Sign-out without the page's CSRF token, or from another site, is refused: the browser stays signed in
        assert client.post("/signout", data={}).status_code == 403
        assert client.post("/signout", data={"csrf": csrf}, headers={"Origin": "http://attacker.example"}
                           ).status_code == 421
        assert client.get("/", headers=HTML).status_code == 200
        # with them, the cookie is cleared
        answer = client.post("/signout", data={"csrf": csrf})
        assert answer.status_code == 303 and 'Max-Age=0' in answer.headers["set-cookie"]


def test_replacing_a_token_signs_its_browsers_out(served: tuple[Served, dict[str, str]]) -> None:
    server, _ = served
    old = create_token(server.home, "replaced", ["read"])
    with signed_in(server, old) as client:
        assert client.get("/", headers=HTML).status_code == 200
        create_token(server.home, "replaced", ["read"])  # a new token of that name: the old one is void
        answer = client.get("/", headers=HTML)
        assert answer.status_code == 303 and answer.headers["location"].startswith("/signin")
        # and the sign-in page it is sent to drops the void cookie
        assert "Max-Age=0" in client.get("/signin", headers=HTML).headers["set-cookie"]
        assert SESSION_COOKIE not in client.cookies
