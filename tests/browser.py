"""Debian's headless Chromium, for the HTML pages the suites check (the audit report, the web page): a DOM
after the browser parsed and ran the page, and screenshots."""
from __future__ import annotations

import contextlib
import os
import shutil
import struct
import subprocess
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest


def chromium() -> str:
    found = shutil.which("chromium")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("chromium is required when CI is set, but it is not installed")
    pytest.skip("chromium is not installed")


def headless(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"chromium-profile-{len(list(tmp_path.glob('chromium-profile-*')))}"
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, f"chromium failed ({done.returncode}):\n{done.stderr[-3000:]}"
    return done


def png_size(data: bytes) -> tuple[int, int]:
    """The width and height of a PNG image (after checking it is one)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


# -- reading a DOM dump ----------------------------------------------------------------------------------
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    """One element of a parsed page: its tag, attributes, children and text."""

    def __init__(self, tag: str, attrs: dict[str, str | None]) -> None:
        self.tag, self.attrs = tag, attrs
        self.children: list[Node | str] = []

    def text(self) -> str:
        """The element's text content, whitespace collapsed."""
        parts = [c if isinstance(c, str) else c.text() for c in self.children]
        return " ".join(" ".join(parts).split())

    def all(self, tag: str | None = None, **attrs: str | bool) -> list[Node]:
        """Every element below this one with the tag and attributes (a value, or True for "present";
        `class_` matches one class among many)."""
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if child.matches(tag, attrs):
                    found.append(child)
                found += child.all(tag, **attrs)
        return found

    def one(self, tag: str | None = None, **attrs: str | bool) -> Node:
        (found,) = self.all(tag, **attrs)
        return found

    def matches(self, tag: str | None, attrs: dict[str, str | bool]) -> bool:
        if tag is not None and self.tag != tag:
            return False
        for name, wanted in attrs.items():
            if name == "class_":
                if wanted not in (self.attrs.get("class") or "").split():
                    return False
            elif (name := name.replace("_", "-")) not in self.attrs or (
                    wanted is not True and self.attrs[name] != wanted):
                return False
        return True


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse_dom(html: str) -> Node:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root


# -- driving the browser (selenium through Debian's chromedriver) -----------------------------------------
@contextlib.contextmanager
def driven_chromium() -> Iterator[Any]:
    """A headless Chromium driven by selenium through Debian's chromedriver (never a downloaded build)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    driver_path = shutil.which("chromedriver")
    if driver_path is None:
        if os.environ.get("CI"):
            pytest.fail("chromedriver is required when CI is set, but it is not installed")
        pytest.skip("chromedriver is not installed (Debian's chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium()
    for argument in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def click_and_leave(driver: Any, element: Any) -> None:
    """Click a form's button or a link, then wait until the browser has left the page for the answer.

    While the old page is torn down, Chromium may answer a question about the clicked element with an
    inspector error ("Node with given id does not belong to the document") instead of "stale element":
    that, too, means the page is being left, so the wait asks again rather than failing."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    element.click()
    WebDriverWait(driver, 60, ignored_exceptions=(WebDriverException,)).until(
        expected_conditions.staleness_of(element))
