"""roce_net: observe, diagnose and fix host networking on multi-NIC RoCE/RDMA servers.

A Python binding of the Rust ``roce-net`` library. Results are typed, frozen
objects with ``to_dict()`` / ``to_json()``; errors are :class:`RoceNetError`
subclasses; every call that does I/O releases the GIL.

    >>> import roce_net
    >>> state = roce_net.Host(netns="gpu0").snapshot()   # doctest: +SKIP
    >>> [r.dst for r in state.routes if r.table == 254]  # doctest: +SKIP
"""

from __future__ import annotations

from . import _roce_net
from ._errors import (
    ERROR_CLASSES,
    DriftError,
    InvalidInputError,
    LockedError,
    NetlinkError,
    NotFoundError,
    ParseError,
    PolicyError,
    RoceNetError,
    RoceNetIOError,
    RoceNetPermissionError,
    RoceNetTimeoutError,
    RollbackFailedError,
    RolledBackError,
    UnsupportedError,
    VerifyError,
)
from ._types import (
    CHANGE_FIELDS,
    Address,
    Change,
    ConfValues,
    DesiredState,
    GidEntry,
    HostState,
    Interface,
    InterfaceConf,
    LinkStats,
    Neighbor,
    NextHop,
    NicDesired,
    Plan,
    RdmaDevice,
    RdmaPort,
    Route,
    Rule,
    SnapshotWarning,
    SysctlView,
    Tuning,
    RouteDecision,
    ArpReply,
    ArpProbeResult,
    RenderedFile,
    FileDiff,
    WriteReport,
    LabNic,
)
from ._roce_net import (
    Host,
    Lab,
    Policy,
    load_snapshot,
    parse_snapshot,
    persistence_backends,
    plan,
    render_persistence,
    save_snapshot,
    write_persistence,
)

__version__: str = _roce_net.__version__
SCHEMA_VERSION: int = _roce_net.SCHEMA_VERSION

__all__ = [
    "__version__",
    "SCHEMA_VERSION",
    # handles and functions
    "Host",
    "load_snapshot",
    "parse_snapshot",
    "save_snapshot",
    "Policy",
    "plan",
    "render_persistence",
    "write_persistence",
    "persistence_backends",
    "Lab",
    # result types
    "HostState",
    "SnapshotWarning",
    "Interface",
    "LinkStats",
    "Address",
    "Neighbor",
    "Route",
    "NextHop",
    "Rule",
    "SysctlView",
    "ConfValues",
    "InterfaceConf",
    "Tuning",
    "RdmaDevice",
    "RdmaPort",
    "GidEntry",
    "Change",
    "CHANGE_FIELDS",
    "Plan",
    "DesiredState",
    "NicDesired",
    "RouteDecision",
    "ArpReply",
    "ArpProbeResult",
    "RenderedFile",
    "FileDiff",
    "WriteReport",
    "LabNic",
    # errors
    "RoceNetError",
    "RoceNetPermissionError",
    "NotFoundError",
    "InvalidInputError",
    "PolicyError",
    "ParseError",
    "NetlinkError",
    "RoceNetIOError",
    "DriftError",
    "LockedError",
    "VerifyError",
    "RolledBackError",
    "RollbackFailedError",
    "UnsupportedError",
    "RoceNetTimeoutError",
    "ERROR_CLASSES",
]
