"""The FAQ links RocketMQ appends to some error remarks (Apache's ``FAQUrl``).

Clients show a remark as it comes, and tools compare remarks, so the broker and the name
server end the same remarks with the same hint as Apache: ``suggest_todo(url)``, i.e.
``"\\nSee <url> for further details."``; ``attach_default_url`` is the line the Java
client's exceptions end with, which ``rmq mqadmin`` prints as mqadmin does.  Every FAQ url
of Apache 4.9.8 is the same page; the names say which topic of that page a remark points to,
as Apache's constants do.
"""

from __future__ import annotations

_FAQ_PAGE = "http://rocketmq.apache.org/docs/faq/"

APPLY_TOPIC_URL = _FAQ_PAGE
"""A topic that does not exist (send, pull, route lookup)."""
SUBSCRIPTION_GROUP_NOT_EXIST = _FAQ_PAGE
"""A subscription group the broker does not know and may not create."""
SAME_GROUP_DIFFERENT_TOPIC = _FAQ_PAGE
"""A pull whose group or subscription the broker has not seen in a heartbeat."""


UNEXPECTED_EXCEPTION_URL = _FAQ_PAGE
"""What a client exception's message points to (``FAQUrl.attachDefaultURL``)."""


def suggest_todo(url: str) -> str:
    """The hint ending a remark that points to ``url`` (``FAQUrl.suggestTodo``)."""
    return f"\nSee {url} for further details."


def attach_default_url(message: str) -> str:
    """``message`` with the line Java's client exceptions end with, unless it already points
    somewhere (``FAQUrl.attachDefaultURL``)."""
    if "\nSee " in message:
        return message
    return f"{message}\nFor more information, please visit the url, {UNEXPECTED_EXCEPTION_URL}"
