"""Errors raised by the message store.

The store reports every failure a user can act on (a full disk, a store directory held by
another process, an unreadable or inconsistent file) as a :class:`StoreError` whose message
names the file or directory and says what went wrong.  Outcomes of a single put or get are not
errors; they are status values (``PutMessageStatus``, ``GetMessageStatus``) returned by the
store.
"""

from __future__ import annotations


class StoreError(Exception):
    """A store file or directory cannot be created, opened, locked or trusted."""


class DiskFullError(StoreError):
    """A store file cannot be created for want of space (ENOSPC, EDQUOT, EFBIG)."""


class StoreLockedError(StoreError):
    """The store directory is locked by another running process."""
