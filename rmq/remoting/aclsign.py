"""The request signature of Apache's plain ACL, one implementation for both ends.

A client holding session credentials adds `AccessKey` (and `SecurityToken` when it has one)
to a request's ext fields, then signs: the values of every ext field except `Signature`,
taken in the order of their keys (Java's `TreeMap`: UTF-16 code-unit order), concatenated as
UTF-8, followed by the body bytes; HMAC-SHA1 under the secret key, Base64.  The result goes
in the `Signature` field.  The broker recomputes the same content from what arrived (leaving
out `Signature` and the unique-key query flag, as Apache's validator does) and compares.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable, Mapping

from rmq.remoting.command import Buffer, RemotingCommand

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
"""Left out of the content the broker verifies (Apache's PlainAccessValidator.parse)."""

CLIENT_EXCLUDED = frozenset((SIGNATURE,))
SERVER_EXCLUDED = frozenset((SIGNATURE, UNIQUE_MSG_QUERY_FLAG))


def _java_order(key: str) -> bytes:
    """Sort key giving Java's String.compareTo order (UTF-16 code units)."""
    return key.encode("utf-16-be", "surrogatepass")


def signing_content(
    ext_fields: Mapping[str, str] | None,
    bodies: Iterable[Buffer],
    *,
    exclude: frozenset[str] = CLIENT_EXCLUDED,
) -> bytes:
    """The bytes a signature covers: the sorted ext field values, then the body buffers."""
    fields = ext_fields or {}
    keys = [k for k in fields if k not in exclude]
    if not all(k.isascii() for k in keys):
        keys.sort(key=_java_order)
    else:
        keys.sort()
    parts = [("".join(fields[k] for k in keys)).encode("utf-8", "surrogatepass")]
    parts.extend(bytes(b) for b in bodies)
    return b"".join(parts)


def calc_signature(data: Buffer, secret_key: str) -> str:
    """Base64 of HMAC-SHA1(data) under the UTF-8 bytes of `secret_key`."""
    digest = hmac.new(secret_key.encode("utf-8"), data, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def command_bodies(command: RemotingCommand) -> list[Buffer]:
    """The body and body segments of `command`, in frame order."""
    bodies: list[Buffer] = [] if command.body is None else [command.body]
    bodies.extend(command.body_segments)
    return bodies


def sign_request(
    command: RemotingCommand,
    access_key: str,
    secret_key: str,
    security_token: str | None = None,
) -> None:
    """Add AccessKey, SecurityToken (when given) and Signature to `command`, in place."""
    command.add_ext_field(ACCESS_KEY, access_key)
    if security_token is not None:
        command.add_ext_field(SECURITY_TOKEN, security_token)
    content = signing_content(command.ext_fields, command_bodies(command))
    command.add_ext_field(SIGNATURE, calc_signature(content, secret_key))


def request_signature(command: RemotingCommand, secret_key: str) -> str:
    """The signature the broker expects on `command` (as received) under `secret_key`."""
    content = signing_content(command.ext_fields, command_bodies(command), exclude=SERVER_EXCLUDED)
    return calc_signature(content, secret_key)
