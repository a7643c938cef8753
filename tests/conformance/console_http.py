"""Speaking to a running `rmq console` over HTTP as one browser would: its session cookie
and CSRF token kept from page to page, forms posted with the token, the "done" line of a
change read back."""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request

from tests.conformance.test_console import _Page


class ConsoleSession:
    """The console's session of one browser: its cookie and CSRF token."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.cookie = ""
        self.csrf = ""

    def open(self, path: str, form: dict[str, str] | None = None) -> tuple[int, str]:
        data = None
        if form is not None:
            data = urllib.parse.urlencode({**form, "csrf": self.csrf}).encode()
        request = urllib.request.Request(self.base + path, data=data)
        if self.cookie:
            request.add_header("Cookie", self.cookie)
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                status, body, headers = answer.status, answer.read(), answer.headers
        except urllib.error.HTTPError as error:
            status, body, headers = error.code, error.read(), error.headers
        if headers.get("Set-Cookie"):
            self.cookie = headers["Set-Cookie"].split(";")[0]
        text = body.decode()
        token = re.search(r'name="csrf" value="([^"]+)"', text)
        if token:
            self.csrf = token.group(1)
        return status, text


def done(status: int, text: str) -> str:
    assert status == 200, text
    return _Page(text).ids["done"].replace("\n", " ")
