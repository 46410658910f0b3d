"""Exceptions raised by roce_net.

Every error from the library is a :class:`RoceNetError`. Its subclass follows the
library's ``ErrorKind`` (``kind`` holds the kind's stable name), so callers can
catch what they can handle::

    try:
        roce_net.Host(netns="gpu0")
    except roce_net.NotFoundError as e:
        print(e.kind, e.message)
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Sequence, Tuple, Type

_FIELD_PATH = re.compile(r'[A-Za-z_][\w-]*(?:\.[\w*?-]+|\."[^"]*"|\[\d+\])*')


class RoceNetError(Exception):
    """Base class of every roce_net error.

    Attributes:
        kind: the library's error kind (``"not_found"``, ``"policy"``, ...).
        message: the innermost message (what failed, on which object, what to do).
        errno: the errno the kernel reported, or None.
        extack: the kernel's extended-ack text, or None.
        context: context lines, innermost first ("applying change 2 of 5", ...).

    ``str(e)`` is the full text: context, message and the kernel's text.
    """

    kind: str
    message: str
    errno: Optional[int]
    extack: Optional[str]
    context: Tuple[str, ...]

    def __init__(
        self,
        text: str,
        *,
        kind: str = "io",
        message: Optional[str] = None,
        errno: Optional[int] = None,
        extack: Optional[str] = None,
        context: Sequence[str] = (),
    ) -> None:
        super().__init__(text)
        self.kind = kind
        self.message = text if message is None else message
        self.errno = errno
        self.extack = extack
        self.context = tuple(context)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.message


class RoceNetPermissionError(RoceNetError, PermissionError):
    """The operation needs root or CAP_NET_ADMIN / CAP_SYS_ADMIN (kind ``permission``)."""

    def __init__(self, text: str, **kw: object) -> None:
        RoceNetError.__init__(self, text, **kw)  # type: ignore[arg-type]


class NotFoundError(RoceNetError, LookupError):
    """A named object (namespace, interface, file) does not exist (kind ``not_found``)."""


class InvalidInputError(RoceNetError, ValueError):
    """Input from the caller is malformed (kind ``invalid_input``)."""


class PolicyError(RoceNetError, ValueError):
    """A policy is invalid or conflicts with the host (kind ``policy``).

    ``field`` is the path of the offending field (``nics[2].table``) when known.
    """

    @property
    def field(self) -> Optional[str]:
        """The field path the library named (``routing.table_base``,
        ``nics.include[0]``), or None when the error is about the whole document."""
        head, sep, _ = self.message.partition(": ")
        if sep and _FIELD_PATH.fullmatch(head):
            return head
        return None


class ParseError(RoceNetError, ValueError):
    """A file or document could not be parsed (kind ``parse``)."""


class NetlinkError(RoceNetError):
    """The kernel refused a netlink request (kind ``netlink``); see ``errno``/``extack``."""


class RoceNetIOError(RoceNetError):
    """Another I/O failure (kind ``io``)."""


class DriftError(RoceNetError):
    """The host changed since the plan was made (kind ``drift``): plan again."""


class LockedError(RoceNetError):
    """Another roce-net apply holds this namespace's lock (kind ``locked``)."""


class VerifyError(RoceNetError):
    """After applying, the host does not match the plan (kind ``verify``)."""


class RolledBackError(RoceNetError):
    """A change failed and everything was rolled back (kind ``rolled_back``)."""


class RollbackFailedError(RoceNetError):
    """Rollback itself failed; the host may be in a mixed state (kind ``rollback_failed``)."""


class UnsupportedError(RoceNetError):
    """The kernel or build does not support this (kind ``unsupported``)."""


class NoRdmaError(RoceNetError):
    """RDMA cannot be used here: no libibverbs, no kernel support, no devices, no
    /dev/infiniband, or a build without verbs (kind ``no_rdma``; the message
    starts with the reason)."""


class RoceNetTimeoutError(RoceNetError, TimeoutError):
    """A wait ran out of time (kind ``timeout``)."""

    def __init__(self, text: str, **kw: object) -> None:
        RoceNetError.__init__(self, text, **kw)  # type: ignore[arg-type]


ERROR_CLASSES: Dict[str, Type[RoceNetError]] = {
    "permission": RoceNetPermissionError,
    "not_found": NotFoundError,
    "invalid_input": InvalidInputError,
    "policy": PolicyError,
    "parse": ParseError,
    "netlink": NetlinkError,
    "io": RoceNetIOError,
    "drift": DriftError,
    "locked": LockedError,
    "verify": VerifyError,
    "rolled_back": RolledBackError,
    "rollback_failed": RollbackFailedError,
    "unsupported": UnsupportedError,
    "timeout": RoceNetTimeoutError,
    "no_rdma": NoRdmaError,
}
"""Exception class by error kind name."""

for _cls in (RoceNetError, *ERROR_CLASSES.values()):
    _cls.__module__ = "roce_net"
del _cls
