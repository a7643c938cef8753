"""The DLedger RPC as DLedger 0.3.1.2 speaks it on the remoting protocol.

Every call is a remoting request with the DLedger request code, no custom header, and the
fastjson JSON of the request object as its body; the answer is a remoting response with code
200 whatever happened, its body the JSON of the response object, whose ``code`` field says
what did.  Bodies are plain dicts here, written with the keys sorted and nulls left out (as
fastjson writes a bean), read leniently (unknown keys are ignored, missing ones take Java's
defaults).

Every body carries the base fields ``group``, ``remoteId`` (the node it is for), ``localId``
(the sender), ``code`` (200 unless an answer says otherwise), ``leaderId`` and ``term``.
Entries travel as objects with ``body`` in base64 and their header fields; a PUSH request also
carries the getters fastjson serialises (``batch``, ``count``, ``firstEntryIndex``,
``lastEntryIndex``, ``totalSize``).
"""

from __future__ import annotations

import base64
import enum
from typing import Any

from rmq.common import fastjson
from rmq.remoting.command import RemotingCommand, create_request, create_response
from rmq.store.dledger.entry import Entry

Body = dict[str, Any]


class DLedgerRequestCode(enum.IntEnum):
    METADATA = 50000
    APPEND = 50001
    GET = 50002
    VOTE = 51001
    HEART_BEAT = 51002
    PULL = 51003
    PUSH = 51004
    LEADERSHIP_TRANSFER = 51005


class Code(enum.IntEnum):
    """DLedgerResponseCode: the ``code`` of a response body."""

    UNKNOWN = -1
    SUCCESS = 200
    TIMEOUT = 300
    METADATA_ERROR = 301
    NETWORK_ERROR = 302
    UNSUPPORTED = 303
    UNKNOWN_GROUP = 400
    UNKNOWN_MEMBER = 401
    UNEXPECTED_MEMBER = 402
    EXPIRED_TERM = 403
    NOT_LEADER = 404
    NOT_FOLLOWER = 405
    INCONSISTENT_STATE = 406
    INCONSISTENT_TERM = 407
    INCONSISTENT_INDEX = 408
    INCONSISTENT_LEADER = 409
    INDEX_OUT_OF_RANGE = 410
    UNEXPECTED_ARGUMENT = 411
    REPEATED_REQUEST = 412
    REPEATED_PUSH = 413
    DISK_ERROR = 414
    DISK_FULL = 415
    TERM_NOT_READY = 416
    FALL_BEHIND_TOO_MUCH = 417
    TAKE_LEADERSHIP_FAILED = 418
    INDEX_LESS_THAN_LOCAL_BEGIN = 419
    REQUEST_WITH_EMPTY_BODYS = 420
    PUSH_REQUEST_IS_FULL = 421
    INTERNAL_ERROR = 500
    TERM_CHANGED = 501
    WAIT_QUORUM_ACK_TIMEOUT = 502
    LEADER_PENDING_FULL = 503
    ILLEGAL_MEMBER_STATE = 504
    LEADER_NOT_READY = 505
    LEADER_TRANSFERRING = 506


class VoteResult(enum.Enum):
    UNKNOWN = "UNKNOWN"
    ACCEPT = "ACCEPT"
    REJECT_UNKNOWN_LEADER = "REJECT_UNKNOWN_LEADER"
    REJECT_UNEXPECTED_LEADER = "REJECT_UNEXPECTED_LEADER"
    REJECT_EXPIRED_VOTE_TERM = "REJECT_EXPIRED_VOTE_TERM"
    REJECT_ALREADY_VOTED = "REJECT_ALREADY_VOTED"
    REJECT_ALREADY_HAS_LEADER = "REJECT_ALREADY_HAS_LEADER"
    REJECT_TERM_NOT_READY = "REJECT_TERM_NOT_READY"
    REJECT_TERM_SMALL_THAN_LEDGER = "REJECT_TERM_SMALL_THAN_LEDGER"
    REJECT_EXPIRED_LEDGER_TERM = "REJECT_EXPIRED_LEDGER_TERM"
    REJECT_SMALL_LEDGER_END_INDEX = "REJECT_SMALL_LEDGER_END_INDEX"
    REJECT_TAKING_LEADERSHIP = "REJECT_TAKING_LEADERSHIP"


class PushType(enum.Enum):
    APPEND = "APPEND"
    COMMIT = "COMMIT"
    COMPARE = "COMPARE"
    TRUNCATE = "TRUNCATE"


REMOTING_SUCCESS = 200
"""The remoting-level code of every DLedger response."""


def code_name(code: int) -> str:
    try:
        return Code(code).name
    except ValueError:
        return str(code)


# -- bodies ----------------------------------------------------------------------------


def base(
    group: str | None,
    local_id: str | None,
    remote_id: str | None,
    *,
    leader_id: str | None = None,
    term: int = -1,
    code: int = Code.SUCCESS,
) -> Body:
    """The base fields every request and response carries."""
    return {
        "code": code,
        "group": group,
        "leaderId": leader_id,
        "localId": local_id,
        "remoteId": remote_id,
        "term": term,
    }


def reply_to(request: Body, **fields: Any) -> Body:
    """A response with the request's base fields (``copyBaseInfo``), then ``fields``."""
    body = {key: request.get(key) for key in ("group", "localId", "remoteId", "leaderId")}
    body["code"] = request.get("code", Code.SUCCESS)
    body["term"] = request.get("term", -1)
    body.update(fields)
    return body


def encode_body(body: Body) -> bytes:
    plain = {k: int(v) if isinstance(v, enum.IntEnum) else v for k, v in body.items()}
    return fastjson.dumps_bytes(plain, sort_keys=True)


def decode_body(data: bytes | bytearray | memoryview | None) -> Body:
    if not data:
        return {}
    value = fastjson.loads(bytes(data))
    if not isinstance(value, dict):
        raise ValueError("a DLedger body is a JSON object")
    return value


def entry_json(entry: Entry) -> Body:
    return {
        "body": base64.b64encode(entry.body).decode("ascii"),
        "bodyCrc": entry.body_crc,
        "chainCrc": entry.chain_crc,
        "channel": entry.channel,
        "index": entry.index,
        "magic": entry.magic,
        "pos": entry.pos,
        "size": entry.size,
        "term": entry.term,
    }


def entry_from_json(value: Body) -> Entry:
    body = value.get("body")
    return Entry(
        int(value.get("index", 0)),
        int(value.get("term", 0)),
        int(value.get("pos", 0)),
        base64.b64decode(body) if body else b"",
        int(value.get("magic", 0)),
        int(value.get("channel", 0)),
        int(value.get("chainCrc", 0)),
        int(value.get("bodyCrc", 0)),
    )


def push_request(head: Body, kind: PushType, commit_index: int, entry: Entry | None = None) -> Body:
    """A PushEntryRequest body (one entry or none; rmq pushes no batches)."""
    index = entry.index if entry is not None else -1
    return {
        **head,
        "batch": False,
        "batchEntry": [],
        "commitIndex": commit_index,
        "count": 1 if entry is not None else 0,
        "entry": entry_json(entry) if entry is not None else None,
        "firstEntryIndex": index,
        "lastEntryIndex": index,
        "totalSize": 0,
        "type": kind.value,
    }


def push_entries(request: Body) -> list[Entry]:
    """The entries of a PUSH: its batch, or its one entry."""
    batch = request.get("batchEntry") or []
    if batch:
        return [entry_from_json(item) for item in batch]
    entry = request.get("entry")
    return [entry_from_json(entry)] if entry else []


def push_response(request: Body, code: int, begin_index: int, end_index: int) -> Body:
    """What a follower answers a PUSH (``EntryHandler.buildResponse``)."""
    body: Body = {
        "beginIndex": begin_index,
        "code": code,
        "endIndex": end_index,
        "group": request.get("group"),
        "term": request.get("term", -1),
        "count": 0,
    }
    if request.get("type") != PushType.COMMIT.value:
        entries = push_entries(request)
        body["index"] = entries[0].index if entries else -1
        body["count"] = len(entries)
    return body


# -- frames ----------------------------------------------------------------------------


def request_command(code: DLedgerRequestCode, body: Body) -> RemotingCommand:
    return create_request(int(code), body=encode_body(body))


def response_command(body: Body) -> RemotingCommand:
    return create_response(REMOTING_SUCCESS, body=encode_body(body))
