"""The plain ACL's one exception, and the remark Apache's broker answers a refusal with.

Apache's broker refuses a request its access validator rejects with SYSTEM_ERROR and the
remark `RemotingHelper.exceptionSimpleDesc`: the exception's `toString` and the first frame
of its stack trace (the line of the acl 4.9.8 jar that threw).  `AclError.where` names that
frame, so the remark rmq answers is the one Apache's clients see.
"""

from __future__ import annotations

EXCEPTION_CLASS = "org.apache.rocketmq.acl.common.AclException"
_PACKAGE = "org.apache.rocketmq.acl.plain."

# Frames of the acl 4.9.8 jar that throw (class.method(File.java:line)).
NO_ACCESS_KEY = "PlainPermissionManager.validate(PlainPermissionManager.java:664)"
NO_ACCOUNT = "PlainPermissionManager.validate(PlainPermissionManager.java:668)"
BAD_SIGNATURE = "PlainPermissionManager.validate(PlainPermissionManager.java:684)"
NEED_ADMIN = "PlainPermissionManager.checkPerm(PlainPermissionManager.java:581)"
NO_DEFAULT_PERM = "PlainPermissionManager.checkPerm(PlainPermissionManager.java:606)"
NO_PERM = "PlainPermissionManager.checkPerm(PlainPermissionManager.java:611)"
PARSE_FAILED = "PlainAccessValidator.parse(PlainAccessValidator.java:134)"


class AclError(Exception):
    """A refused request or a refused ACL setting, with Apache's message."""

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def remark(self) -> str:
        """The remark of Apache's SYSTEM_ERROR answer for this refusal."""
        text = f"{EXCEPTION_CLASS}: {self.message}"
        return text if self.where is None else f"{text}, {_PACKAGE}{self.where}"
