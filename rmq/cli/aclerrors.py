"""A broker's ACL refusal, said in one line a user can act on.

A broker with `aclEnable=true` refuses a request with SYSTEM_ERROR and the remark of Apache's
`AclException` (the same words from Apache's broker and rmq's: `rmq.server.broker.acl`):

    org.apache.rocketmq.acl.common.AclException: No default permission for topic:Orders, org...

`acl_error` finds such a refusal in a client error (its causes, and each failure of an
`AdminError`) and turns it into an `RmqError` naming what is missing, e.g.

    no PUB permission on topic Orders for access key alice (broker 127.0.0.1:10911)

The remark is the source for the resource and, where it has one, the access key; the
permission is what the command needed (`topic_perm`: PUB to send, SUB to consume; groups
always need SUB); the access key otherwise is the one the command signed with.  A refusal
ends the command (`rmq.cli.refusals`).
"""

from __future__ import annotations

import re

from rmq.cli.errors import RmqError, exception_chain

ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException: "
_FRAME = re.compile(r", org\.apache\.rocketmq\.[\w.$]+\([\w.]+:\d+\)$")
_NO_PERM = re.compile(r"No default permission for (topic|group):(.*)")
_NO_ACCOUNT = re.compile(r"No acl config for (.*)")
_BAD_SIGNATURE = re.compile(r"Check signature failed for accessKey=(.*)")
_NEED_ADMIN = re.compile(r"Need admin permission for request code=(\d+), but accessKey=(.*) is not")
_CREDENTIALS_HINT = "give --access-key and --secret-key (or RMQ_ACCESS_KEY and RMQ_SECRET_KEY)"


def acl_message(remark: str | None) -> str | None:
    """The AclException's message in a refusal's remark, None when it is no ACL refusal."""
    if not remark or not remark.startswith(ACL_EXCEPTION):
        return None
    return _FRAME.sub("", remark[len(ACL_EXCEPTION) :])


def acl_error(exc: BaseException, *, topic_perm: str = "PUB") -> RmqError | None:
    """The one-line error for the first ACL refusal found in `exc`, else None."""
    for addr, remark in _refusals(exc):
        message = acl_message(remark)
        if message is not None:
            return _describe(message, addr, topic_perm)
    return None


def _refusals(exc: BaseException) -> list[tuple[str | None, str | None]]:
    """(broker address, remark) of every broker answer inside `exc`."""
    from rmq.client.errors import MQBrokerError, MQClientError

    found: list[tuple[str | None, str | None]] = []
    for server, error in exception_chain(exc):
        if isinstance(error, MQBrokerError):
            found.append((error.addr or server, error.remark))
        elif isinstance(error, MQClientError):
            found.append((server, error.remark))
    return found


def _describe(message: str, addr: str | None, topic_perm: str) -> RmqError:
    where = f" (broker {addr})" if addr else ""
    key = _access_key()
    if match := _NO_PERM.fullmatch(message):
        kind, name = match.groups()
        perm = topic_perm if kind == "topic" else "SUB"
        return RmqError(
            f"no {perm} permission on {kind} {name} for access key {key or '(none)'}{where}",
            f"grant it with 'rmq acl set' (--{kind}-perm {name}={perm}) or use another access key",
        )
    if match := _NO_ACCOUNT.fullmatch(message):
        return RmqError(
            f"access key {match[1]} is not an account of the broker's ACL{where}",
            "check --access-key / RMQ_ACCESS_KEY, or create it with 'rmq acl set'",
        )
    if match := _BAD_SIGNATURE.fullmatch(message):
        return RmqError(
            f"wrong secret key for access key {match[1]}: the signature was refused{where}",
            "check --secret-key / RMQ_SECRET_KEY",
        )
    if message == "No accessKey is configured":
        return RmqError(f"the broker requires ACL credentials{where}", _CREDENTIALS_HINT)
    if match := _NEED_ADMIN.fullmatch(message):
        from rmq.remoting.codes import RequestCode, code_name

        code = code_name(int(match[1]), RequestCode)
        return RmqError(
            f"access key {match[2]} is not an admin account: {code} needs one{where}",
            "use an admin account's access key",
        )
    return RmqError(f"refused by the broker's ACL{where}: {message}")


def _access_key() -> str | None:
    from rmq.client.credentials import default_credentials

    credentials = default_credentials()
    return credentials.access_key if credentials is not None else None
