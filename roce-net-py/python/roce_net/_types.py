"""Typed, frozen result objects.

Each class mirrors one serde struct of the Rust library field for field (same
names, same JSON); the import checks that the classes cover exactly the structs
the binding returns, and ``tests/test_schema.py`` checks each class's fields
against the schema the binding exports (``_roce_net._schema()``, see
docs/python.md). Instances are built directly by the native module (see
``roce-net-py/src/convert.rs``); they are immutable (assignment raises
``dataclasses.FrozenInstanceError``), sequences are tuples (except the
``routes`` of a snapshot from the library, a lazy immutable sequence, see
``HostState``), and every object has
``to_dict()`` (plain JSON-ready data, exactly the library's JSON schema),
``to_json()`` and the class methods ``from_dict()`` / ``from_json()``, which
validate through the library.

IP addresses, prefixes and MAC addresses are strings as ``ip`` prints them
(``"198.18.0.11"``, ``"198.18.0.0/24"``, ``"02:aa:00:0f:10:ff"``); enums are
their stable lower/upper-case names (``"UP"``, ``"unicast"``, ``"link"``).
"""

from __future__ import annotations

import dataclasses
import json
import collections.abc
import sys
from typing import Any, ClassVar, Dict, FrozenSet, Optional, Sequence, Tuple, Type, TypeVar

from . import _roce_net
from ._errors import ERROR_CLASSES, RoceNetError

__all__ = [
    "HostState",
    "SnapshotWarning",
    "VerbsView",
    "VerbsDevice",
    "VerbsPort",
    "VerbsGid",
    "NoRdma",
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
    "Qos",
    "DcbApp",
    "RdmaCmPort",
    "Change",
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
    "Subject",
    "Remediation",
    "Finding",
    "FindingCounts",
    "NcclVar",
    "NcclAdvice",
    "GidPick",
    "GidChoice",
    "PickOutcome",
    "PortRef",
    "GidRow",
    "Ibdev2NetdevRow",
    "HostSummary",
    "FleetReport",
    "ApplyReport",
    "RollbackReport",
    "FibDecision",
]

_T = TypeVar("_T", bound="_Record")

#: ``slots=True`` where ``dataclasses`` has it (CPython >= 3.10); on 3.8 and 3.9
#: the classes keep a ``__dict__`` and are otherwise the same (frozen, equal,
#: hashable, built by the native module the same way).
_SLOTS: Dict[str, Any] = {"slots": True} if sys.version_info >= (3, 10) else {}

def _plain(v: Any) -> Any:
    if isinstance(v, _Record):
        return v.to_dict()
    if isinstance(v, (tuple, list, _roce_net.RouteSeq)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        # JSON object keys are strings (table ids: "254"), as the library writes them.
        return {(k if isinstance(k, str) else str(k)): _plain(x) for k, x in v.items()}
    return v


class _Record:
    """Shared behaviour of every result class."""

    __slots__ = ()
    #: The Rust struct this mirrors (the key the native module builds it by).
    _RUST: ClassVar[str] = ""
    #: Fields the library omits from JSON when empty / None.
    _OMIT_EMPTY: ClassVar[FrozenSet[str]] = frozenset()

    def to_dict(self) -> Dict[str, Any]:
        """Plain data (dicts, lists, str, int, bool, None): exactly the library's JSON
        (``json.loads(x.to_json()) == x.to_dict()``; map keys are strings)."""
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name.startswith("_"):
                continue
            v = getattr(self, f.name)
            if f.name in self._OMIT_EMPTY and (v is None or v == ()):
                continue
            out[f.name] = _plain(v)
        return out

    def to_json(self, *, indent: Optional[int] = None) -> str:
        """JSON text of :meth:`to_dict`: compact (no spaces, as the library writes
        it) by default, indented by ``indent`` spaces otherwise (``json.dumps``)."""
        if indent is None:
            return json.dumps(self.to_dict(), separators=(",", ":"))
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls: Type[_T], data: Dict[str, Any]) -> _T:
        """Build from plain data, validated by the library (raises ParseError)."""
        return cls.from_json(json.dumps(data))

    @classmethod
    def from_json(cls: Type[_T], text: str) -> _T:
        """Build from JSON text, validated by the library (raises ParseError)."""
        obj = _roce_net._from_json(cls._RUST, text)
        if not isinstance(obj, cls):  # a registry mix-up, not bad input
            raise TypeError(f"roce_net built {type(obj).__name__} for {cls.__name__}")
        return obj


@dataclasses.dataclass(frozen=True, **_SLOTS)
class LinkStats(_Record):
    """Link counters (``IFLA_STATS64``)."""

    _RUST: ClassVar[str] = "LinkStats"
    rx_packets: int
    tx_packets: int
    rx_bytes: int
    tx_bytes: int
    rx_errors: int
    tx_errors: int
    rx_dropped: int
    tx_dropped: int


@dataclasses.dataclass(frozen=True, **_SLOTS)
class Interface(_Record):
    """A network interface (netdev)."""

    _RUST: ClassVar[str] = "Interface"
    _OMIT_EMPTY: ClassVar[FrozenSet[str]] = frozenset({"ethtool_stats", "qos"})
    index: int
    name: str
    kind: Optional[str]
    mac: Optional[str]
    mtu: int
    admin_up: bool
    oper_state: str
    carrier: Optional[bool]
    master: Optional[str]
    stats: LinkStats
    #: ``ethtool -S`` (name -> value), read for the NICs in scope.
    ethtool_stats: Optional[Dict[str, int]] = None
    #: DCB QoS (PFC, trust, DSCP map), read for the NICs in scope.
    qos: Optional[Qos] = None


@dataclasses.dataclass(frozen=True, **_SLOTS)
class Address(_Record):
    """An IP address assigned to an interface."""

    _RUST: ClassVar[str] = "Address"
    ifname: str
    ifindex: int
    address: str
    prefix_len: int
    scope: str
    label: Optional[str]
    secondary: bool = False


@dataclasses.dataclass(frozen=True, **_SLOTS)
class Neighbor(_Record):
    """A neighbour (ARP / NDP) table entry; ``state`` holds ``NUD_*`` names."""

    _RUST: ClassVar[str] = "Neighbor"
    ifname: str
    ifindex: int
    ip: str
    mac: Optional[str]
    state: Tuple[str, ...]
    router: bool = False


@dataclasses.dataclass(frozen=True, **_SLOTS)
class NextHop(_Record):
    """One next hop of a multipath route."""

    _RUST: ClassVar[str] = "NextHop"
    gateway: Optional[str]
    dev: Optional[str]
    weight: int


@dataclasses.dataclass(frozen=True, **_SLOTS)
class Route(_Record):
    """A route in any routing table (``table`` is the full 32-bit id)."""

    _RUST: ClassVar[str] = "Route"
    _OMIT_EMPTY: ClassVar[FrozenSet[str]] = frozenset({"multipath"})
    family: str
    table: int
    dst: str
    type: str
    dev: Optional[str]
    prefsrc: Optional[str]
    gateway: Optional[str]
    scope: str
    protocol: int
    metric: Optional[int]
    tos: int = 0
    multipath: Tuple[NextHop, ...] = ()


@dataclasses.dataclass(frozen=True, **_SLOTS)
class Rule(_Record):
    """A routing policy rule (``ip rule``)."""

    _RUST: ClassVar[str] = "Rule"
    _OMIT_EMPTY: ClassVar[FrozenSet[str]] = frozenset({"goto", "suppress_prefixlen"})
    family: str
    priority: int
    src: Optional[str]
    dst: Optional[str]
    iif: Optional[str]
    oif: Optional[str]
    fwmark: Optional[int]
    fwmask: Optional[int]
    table: int
    action: str
    protocol: int
    tos: int = 0
    invert: bool = False
    goto: Optional[int] = None
    suppress_prefixlen: Optional[int] = None


@dataclasses.dataclass(frozen=True, **_SLOTS)
class ConfValues(_Record):
    """Values of the ``net.ipv4.conf.*`` keys roce-net cares about (None: unreadable)."""

    _RUST: ClassVar[str] = "ConfValues"
    arp_ignore: Optional[int]
    arp_announce: Optional[int]
    arp_filter: Optional[int]
    rp_filter: Optional[int]
    accept_local: Optional[int]
    arp_notify: Optional[int]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class InterfaceConf(_Record):
    """One interface's sysctls: configured on it, and effective (combined with ``all``)."""

    _RUST: ClassVar[str] = "InterfaceConf"
    configured: ConfValues
    effective: ConfValues


@dataclasses.dataclass(frozen=True, **_SLOTS)
class Tuning(_Record):
    """Host-wide tuning sysctls."""

    _RUST: ClassVar[str] = "Tuning"
    netdev_max_backlog: Optional[int]
    rmem_max: Optional[int]
    wmem_max: Optional[int]
    udp_mem: Optional[Tuple[int, int, int]]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class SysctlView(_Record):
    """Every sysctl roce-net reads, for one namespace."""

    _RUST: ClassVar[str] = "SysctlView"
    _OMIT_EMPTY: ClassVar[FrozenSet[str]] = frozenset({"initial_netns", "tuning_access"})
    all: ConfValues
    default: ConfValues
    interfaces: Dict[str, InterfaceConf]
    tuning: Tuning
    #: Whether the snapshot was taken in the initial network namespace (None: not recorded).
    initial_netns: Optional[bool] = None
    #: Per tuning key: "writable", "read_only" or "absent" in this namespace.
    tuning_access: Optional[Dict[str, str]] = None

    def effective(self, iface: str, key: str) -> Optional[int]:
        """The value the kernel acts on for ``key`` on ``iface`` (falls back to ``all``)."""
        c = self.interfaces.get(iface)
        v: Optional[int] = getattr(c.effective if c is not None else self.all, key)
        return v


@dataclasses.dataclass(frozen=True, **_SLOTS)
class DcbApp(_Record):
    """One entry of a NIC's DCB APP table (selector, protocol, priority)."""

    _RUST: ClassVar[str] = "DcbApp"
    selector: int
    protocol: int
    priority: int


@dataclasses.dataclass(frozen=True, **_SLOTS)
class Qos(_Record):
    """A NIC's QoS as DCB reports it: PFC priorities, trust, DSCP map.
    ``dcb_available`` is False for drivers without DCB (veth): nothing else is known."""

    _RUST: ClassVar[str] = "Qos"
    dcb_available: bool
    pfc_enabled: Optional[Tuple[int, ...]]
    pfc_cap: Optional[int]
    pfc_requests: Tuple[int, ...]
    pfc_indications: Tuple[int, ...]
    prio_tc: Optional[Tuple[int, ...]]
    trust: Optional[str]
    dscp_prio: Dict[int, int]
    app: Tuple[DcbApp, ...]
    dcbx: Optional[int]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class RdmaCmPort(_Record):
    """rdma_cm's configfs defaults for one port."""

    _RUST: ClassVar[str] = "RdmaCmPort"
    default_roce_mode: Optional[str]
    default_roce_tos: Optional[int]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class GidEntry(_Record):
    """One populated slot of a port's GID table."""

    _RUST: ClassVar[str] = "GidEntry"
    index: int
    gid: str
    gid_type: Optional[Any]
    netdev: Optional[str]
    ipv4: Optional[str]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class RdmaPort(_Record):
    """One port of an RDMA device."""

    _RUST: ClassVar[str] = "RdmaPort"
    _OMIT_EMPTY: ClassVar[FrozenSet[str]] = frozenset({"gid_tbl_len", "rdma_cm"})
    port: int
    state: Optional[str]
    phys_state: Optional[str]
    link_layer: Optional[str]
    rate: Optional[str]
    netdev: Optional[str]
    active_mtu: Optional[int]
    gids: Tuple[GidEntry, ...]
    counters: Dict[str, int]
    hw_counters: Dict[str, int]
    gid_tbl_len: Optional[int] = None
    #: rdma_cm's configfs defaults (default_roce_mode, default_roce_tos).
    rdma_cm: Optional[RdmaCmPort] = None


@dataclasses.dataclass(frozen=True, **_SLOTS)
class RdmaDevice(_Record):
    """An RDMA device (``/sys/class/infiniband/<name>``)."""

    _RUST: ClassVar[str] = "RdmaDevice"
    _OMIT_EMPTY: ClassVar[FrozenSet[str]] = frozenset({"pci_device_id", "product_name", "part_number"})
    name: str
    node_guid: Optional[str]
    fw_ver: Optional[str]
    hca_type: Optional[str]
    pci_addr: Optional[str]
    netdevs: Tuple[str, ...]
    ports: Tuple[RdmaPort, ...]
    pci_device_id: Optional[str] = None
    product_name: Optional[str] = None
    part_number: Optional[str] = None


@dataclasses.dataclass(frozen=True, **_SLOTS)
class SnapshotWarning(_Record):
    """Something that could not be read, so the snapshot is partial there."""

    _RUST: ClassVar[str] = "Warning"
    source: str
    message: str


@dataclasses.dataclass(frozen=True, **_SLOTS)
class VerbsGid(_Record):
    """One populated GID table entry as libibverbs reports it."""

    _RUST: ClassVar[str] = "VerbsGid"
    index: int
    gid: str
    gid_type: Optional[Any]
    ndev_ifindex: Optional[int]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class VerbsPort(_Record):
    """One port as ``ibv_query_port`` reports it."""

    _RUST: ClassVar[str] = "VerbsPort"
    port: int
    state: str
    phys_state: Optional[str]
    link_layer: Optional[str]
    active_mtu: Optional[int]
    max_mtu: Optional[int]
    gid_tbl_len: int
    gids: Tuple[VerbsGid, ...]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class VerbsDevice(_Record):
    """One device as libibverbs sees it (``error``: why it could not be read)."""

    _RUST: ClassVar[str] = "VerbsDevice"
    name: str
    node_guid: Optional[str]
    fw_ver: Optional[str]
    ports: Tuple[VerbsPort, ...]
    error: Optional[str]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class NoRdma(_Record):
    """Why RDMA cannot be used: ``reason`` (``no_library``, ``no_kernel_support``,
    ``no_devices``, ``no_device_files``, ``not_built``) and ``detail``."""

    _RUST: ClassVar[str] = "NoRdma"
    reason: str
    detail: str


@dataclasses.dataclass(frozen=True, **_SLOTS)
class VerbsView(_Record):
    """The RDMA devices as libibverbs reports them (``verbs_view``,
    ``snapshot --verbs``); ``unavailable`` says why there are none."""

    _RUST: ClassVar[str] = "VerbsView"
    library: Optional[str]
    gid_query: Optional[str]
    unavailable: Optional[NoRdma]
    devices: Tuple[VerbsDevice, ...]
    warnings: Tuple[SnapshotWarning, ...] = ()


@dataclasses.dataclass(frozen=True, **_SLOTS)
class HostState(_Record):
    """One snapshot of a host's (or a namespace's) networking.

    A snapshot returned by the library keeps its Rust original, so passing it back
    (``doctor``, ``plan``, ...) is free and ``to_json()`` is the library's own JSON.

    Its ``routes`` is then a ``RouteSeq``: an immutable sequence over the Rust
    routes that builds each ``Route`` when it is read (indexing, slicing,
    iterating), so a snapshot of a 100k-route table costs only the routes a caller
    looks at. It compares equal to a tuple of the same routes; ``tuple(routes)``
    materialises them all. A ``HostState`` built in Python holds a tuple.
    """

    _RUST: ClassVar[str] = "HostState"
    _OMIT_EMPTY: ClassVar[FrozenSet[str]] = frozenset({"verbs"})
    schema_version: int
    hostname: str
    netns: Optional[str]
    captured_at: int
    interfaces: Tuple[Interface, ...]
    addresses: Tuple[Address, ...]
    neighbors: Tuple[Neighbor, ...]
    routes: Sequence[Route]
    rules: Tuple[Rule, ...]
    sysctls: SysctlView
    table_names: Dict[int, str]
    rdma: Tuple[RdmaDevice, ...]
    verbs: Optional[VerbsView] = None
    warnings: Tuple[SnapshotWarning, ...] = ()
    _native: Optional[Any] = dataclasses.field(default=None, repr=False, compare=False)

    def to_dict(self) -> Dict[str, Any]:
        """Plain data, exactly the library's snapshot JSON schema."""
        if self._native is not None:
            # json.loads of the library's compact JSON beats walking 100k objects.
            d: Dict[str, Any] = json.loads(self._native.to_json())
            return d
        return _Record.to_dict(self)

    def to_json(self, *, indent: Optional[int] = None) -> str:
        """JSON text: compact (one line, what ``roce-net snapshot`` writes) by
        default; ``indent=2`` indents as ``roce-net snapshot --pretty`` does (any
        width from 0 to 64, as ``json.dumps``). A snapshot from the library is
        written by the library's own serializer either way."""
        if self._native is not None:
            s: str = self._native.to_json(indent)
            return s
        return _Record.to_json(self, indent=indent)

    def __reduce__(self) -> Tuple[Any, Tuple[str]]:
        # Pickled as the library's JSON (the native original is not picklable);
        # unpickling parses it back, native original included.
        return (HostState.from_json, (self.to_json(),))

    def interface(self, name: str) -> Optional[Interface]:
        """The interface called ``name``, or None."""
        for i in self.interfaces:
            if i.name == name:
                return i
        return None

    def addresses_of(self, ifname: str) -> Tuple[Address, ...]:
        """Addresses on one interface."""
        return tuple(a for a in self.addresses if a.ifname == ifname)


@dataclasses.dataclass(frozen=True, **_SLOTS)
class NicDesired(_Record):
    """What roce-net wants for one NIC (its table and source rule)."""

    _RUST: ClassVar[str] = "NicDesired"
    ifname: str
    address: str
    prefix_len: int
    table: int
    table_name: str
    rule_priority: int


@dataclasses.dataclass(frozen=True, **_SLOTS)
class DesiredState(_Record):
    """The full desired state a policy produces on a host."""

    _RUST: ClassVar[str] = "DesiredState"
    nics: Tuple[NicDesired, ...]
    routes: Tuple[Route, ...]
    rules: Tuple[Rule, ...]
    sysctls: Tuple[Tuple[Any, str], ...]
    table_names: Dict[int, str]
    protocol: int


#: Which fields each kind of change carries (``op`` -> field names).
CHANGE_FIELDS: Dict[str, Tuple[str, ...]] = {
    "set_sysctl": ("sysctl", "before", "after"),
    "add_route": ("route",),
    "delete_route": ("route",),
    "replace_route": ("before", "after"),
    "add_rule": ("rule",),
    "delete_rule": ("rule",),
    "flush_neighbors": ("ifname", "entries"),
    "register_table_name": ("id", "name", "before"),
    "restore_neighbors": ("ifname", "entries"),
    "unregister_table_name": ("id", "name"),
}


@dataclasses.dataclass(frozen=True, **_SLOTS)
class Change(_Record):
    """One typed change to a host. ``op`` says which; only that op's fields are set
    (see ``CHANGE_FIELDS``), the others are None."""

    _RUST: ClassVar[str] = "Change"
    op: str
    sysctl: Optional[Any] = None
    before: Optional[Any] = None
    after: Optional[Any] = None
    route: Optional[Route] = None
    rule: Optional[Rule] = None
    ifname: Optional[str] = None
    entries: Optional[Tuple[Neighbor, ...]] = None
    id: Optional[int] = None
    name: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        """Plain data: ``op`` and that op's fields."""
        names = CHANGE_FIELDS.get(self.op)
        out: Dict[str, Any] = {"op": self.op}
        for f in dataclasses.fields(self):
            if f.name == "op":
                continue
            v = getattr(self, f.name)
            if (names is not None and f.name in names) or (names is None and v is not None):
                out[f.name] = _plain(v)
        return out


@dataclasses.dataclass(frozen=True, **_SLOTS)
class Plan(_Record):
    """An ordered list of changes, with the state it was made from."""

    _RUST: ClassVar[str] = "Plan"
    hostname: str
    netns: Optional[str]
    base_fingerprint: str
    changes: Tuple[Change, ...]
    desired: DesiredState
    #: The policy the plan was made from, as plain data (``Policy.from_dict`` rebuilds it).
    policy: Dict[str, Any]
    _native: Optional[Any] = dataclasses.field(default=None, repr=False, compare=False)

    def is_empty(self) -> bool:
        """True when the host already complies."""
        return not self.changes

    def __reduce__(self) -> Tuple[Any, Tuple[str]]:
        return (Plan.from_json, (self.to_json(),))

    def render_diff(self) -> str:
        """A readable diff, one line per object (``+`` add, ``-`` delete, ``~`` change),
        in ``ip`` vocabulary; empty for an empty plan."""
        text: str = _roce_net._render_diff(self)
        return text

    def describe(self) -> Tuple[str, ...]:
        """One line per change."""
        lines: Tuple[str, ...] = _roce_net._describe(self)
        return lines

    def notes(self) -> Tuple[str, ...]:
        """What to know besides the changes, one line each (empty when nothing):
        the table names kept from the host-wide names file because another
        namespace named those tables, and how to get names of its own."""
        lines: Tuple[str, ...] = _roce_net._notes(self)
        return lines

    def to_dict(self) -> Dict[str, Any]:
        """Plain data, exactly the library's plan JSON schema."""
        if self._native is not None:
            d: Dict[str, Any] = json.loads(self._native.to_json())
            return d
        return _Record.to_dict(self)


@dataclasses.dataclass(frozen=True, **_SLOTS)
class RouteDecision(_Record):
    """Where a packet would go (``ip route get``): the table that matched, policy
    rules included."""

    _RUST: ClassVar[str] = "RouteDecision"
    table: int
    dev: Optional[str]
    prefsrc: Optional[str]
    gateway: Optional[str]
    type: str


@dataclasses.dataclass(frozen=True, **_SLOTS)
class ArpReply(_Record):
    """One MAC address that answered an ARP probe."""

    _RUST: ClassVar[str] = "ArpReply"
    mac: str
    sender_ip: str
    count: int


@dataclasses.dataclass(frozen=True, **_SLOTS)
class ArpProbeResult(_Record):
    """What an ARP probe saw: every distinct MAC that answered, in order."""

    _RUST: ClassVar[str] = "ArpProbeResult"
    requests_sent: int
    replies: Tuple[ArpReply, ...]

    @property
    def is_flux(self) -> bool:
        """True when more than one MAC answered for the address (ARP flux)."""
        return len(self.replies) > 1


@dataclasses.dataclass(frozen=True, **_SLOTS)
class RenderedFile(_Record):
    """One boot-persistent file to write (``path`` as on the target host)."""

    _RUST: ClassVar[str] = "RenderedFile"
    path: str
    content: str
    mode: int
    note: Optional[str]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class FileDiff(_Record):
    """How one persistent file would change (``status``: create, modify, unchanged)."""

    _RUST: ClassVar[str] = "FileDiff"
    path: str
    status: str
    mode_before: Optional[int]
    mode_after: int
    diff: str


@dataclasses.dataclass(frozen=True, **_SLOTS)
class WriteReport(_Record):
    """What ``write_persistence`` did (or would do, with ``dry_run``)."""

    _RUST: ClassVar[str] = "WriteReport"
    dry_run: bool
    written: Tuple[str, ...]
    unchanged: Tuple[str, ...]
    backups: Tuple[str, ...]
    originals: Tuple[str, ...]
    diffs: Tuple[FileDiff, ...]
    recovered: Tuple[str, ...]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class LabNic(_Record):
    """One lab interface: a veth end in a lab namespace, plugged into the switch."""

    _RUST: ClassVar[str] = "LabNic"
    namespace: str
    name: str
    address: str
    prefix_len: int


@dataclasses.dataclass(frozen=True, **_SLOTS)
class Subject(_Record):
    """What a finding is about; unused fields are None."""

    _RUST: ClassVar[str] = "Subject"
    _OMIT_EMPTY: ClassVar[FrozenSet[str]] = frozenset(
        {"host", "interface", "device", "port", "address", "mac"}
    )
    host: Optional[str] = None
    interface: Optional[str] = None
    device: Optional[str] = None
    port: Optional[int] = None
    address: Optional[str] = None
    mac: Optional[str] = None


@dataclasses.dataclass(frozen=True, **_SLOTS)
class Remediation(_Record):
    """How to fix a finding: commands for now, the policy setting for good."""

    _RUST: ClassVar[str] = "Remediation"
    commands: Tuple[str, ...]
    policy: Optional[str]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class Finding(_Record):
    """One problem found on a host (``severity``: ``error``, ``warning``, ``info``)."""

    _RUST: ClassVar[str] = "Finding"
    id: str
    severity: str
    subject: Subject
    message: str
    evidence: Dict[str, Any]
    remediation: Remediation


@dataclasses.dataclass(frozen=True, **_SLOTS)
class FindingCounts(_Record):
    """Findings counted by severity."""

    _RUST: ClassVar[str] = "Summary"
    error: int
    warning: int
    info: int


@dataclasses.dataclass(frozen=True, **_SLOTS)
class NcclVar(_Record):
    """One NCCL variable: its value (None: leave it unset) and why."""

    _RUST: ClassVar[str] = "NcclVar"
    name: str
    value: Optional[str]
    reason: str


@dataclasses.dataclass(frozen=True, **_SLOTS)
class PortRef(_Record):
    """One port of an RDMA device."""

    _RUST: ClassVar[str] = "PortRef"
    device: str
    port: int


@dataclasses.dataclass(frozen=True, **_SLOTS)
class GidChoice(_Record):
    """One GID table slot NCCL may use."""

    _RUST: ClassVar[str] = "GidChoice"
    index: int
    gid: str
    gid_type: Optional[Any]
    netdev: Optional[str]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class PickOutcome(_Record):
    """What NCCL ends up with on a port: ``selection`` is ``{"index": n}`` or
    ``{"fails": why}``; ``right`` says whether it is the target GID."""

    _RUST: ClassVar[str] = "PickOutcome"
    selection: Any
    gid: Optional[GidChoice]
    right: Optional[bool]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class GidPick(_Record):
    """Per port: the GID NCCL should use, and what it picks with no variables and
    with the advice, for NCCL 2.21+ (``auto_*``) and before (``legacy_*``)."""

    _RUST: ClassVar[str] = "GidPick"
    port: PortRef
    netdev: Optional[str]
    target: Optional[GidChoice]
    auto_unset: PickOutcome
    auto_advised: PickOutcome
    legacy_unset: PickOutcome
    legacy_advised: PickOutcome


@dataclasses.dataclass(frozen=True, **_SLOTS)
class NcclAdvice(_Record):
    """NCCL settings for one host, each with its reasoning."""

    _RUST: ClassVar[str] = "NcclAdvice"
    vars: Tuple[NcclVar, ...]
    notes: Tuple[str, ...]
    #: Per port: the target GID and what NCCL picks with no variables and with
    #: the advice, for NCCL 2.21+ and before (plain dicts).
    picks: Tuple[GidPick, ...]

    def env(self) -> Dict[str, str]:
        """The variables that have a value, as a dict for ``os.environ.update``."""
        return {v.name: v.value for v in self.vars if v.value is not None}

    def get(self, name: str) -> Optional[NcclVar]:
        """The recommendation for one variable, or None."""
        for v in self.vars:
            if v.name == name:
                return v
        return None


@dataclasses.dataclass(frozen=True, **_SLOTS)
class GidRow(_Record):
    """One row of mlnx-tools' ``show_gids`` (``show_gids()``; ``roce-net gids``).

    Every populated GID slot except the all-zero GID and the zero link-local
    ``fe80::``. ``ipv4`` is the last 32 bits when the first group is ``0000``
    (the IPv4 column), ``ver`` ``"v1"`` / ``"v2"``; both ``None`` where show_gids
    prints nothing. ``netdev`` is ``None`` on a native InfiniBand port."""

    _RUST: ClassVar[str] = "GidRow"
    dev: str
    port: int
    #: The GID table index (what ``NCCL_IB_GID_INDEX`` names).
    index: int
    #: The GID as sysfs prints it (8 groups of 4 hex digits).
    gid: str
    ipv4: Optional[str]
    ver: Optional[str]
    netdev: Optional[str]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class Ibdev2NetdevRow(_Record):
    """One RDMA port and its netdev, as OFED's ``ibdev2netdev`` maps them
    (``ibdev2netdev()``; ``roce-net ibdev2netdev``). ``link_state`` is ``"Up"``,
    ``"Down"`` or ``"NA"`` (the netdev is not in the snapshot); the other
    optional fields are what ``ibdev2netdev -v`` prints (``None`` for its ``NA``)."""

    _RUST: ClassVar[str] = "Ibdev2NetdevRow"
    device: str
    port: int
    netdev: str
    link_state: str
    pci_addr: Optional[str]
    #: ``MT`` and the decimal PCI device id (``"MT4129"``).
    device_id: Optional[str]
    part_number: Optional[str]
    product_name: Optional[str]
    fw_ver: Optional[str]
    #: The port's state (``"ACTIVE"``, ``"DOWN"``, ...).
    port_state: Optional[str]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class HostSummary(_Record):
    """One host in a fleet report."""

    _RUST: ClassVar[str] = "HostSummary"
    hostname: str
    nics: Tuple[str, ...]
    rdma_devices: Tuple[str, ...]
    findings: FindingCounts
    max_severity: Optional[str]
    gid_index: Optional[int]
    mtus: Tuple[int, ...]
    subnets: Tuple[str, ...]
    firmware: Dict[str, Tuple[str, ...]]
    rates: Tuple[str, ...]
    qos: Tuple[str, ...]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class FleetReport(_Record):
    """Per-host summaries and cross-host (``fleet-*``) findings."""

    _RUST: ClassVar[str] = "FleetReport"
    hosts: Tuple[HostSummary, ...]
    findings: Tuple[Finding, ...]


@dataclasses.dataclass(frozen=True, **_SLOTS)
class ApplyReport(_Record):
    """What an apply did; ``confirm_deadline`` (Unix seconds) when it awaits ``confirm()``."""

    _RUST: ClassVar[str] = "ApplyReport"
    applied: int
    changes: Tuple[str, ...]
    confirm_deadline: Optional[int]
    journal: str
    apply_id: Optional[str] = None
    notes: Tuple[str, ...] = ()
    announced: Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, **_SLOTS)
class RollbackReport(_Record):
    """What a rollback undid, and the journal state it found."""

    _RUST: ClassVar[str] = "RollbackReport"
    undone: Tuple[str, ...]
    was: str


@dataclasses.dataclass(frozen=True, **_SLOTS)
class FibDecision(_Record):
    """The route the kernel would pick for a flow, computed offline from a snapshot
    (``route_lookup``): ``kind`` is the route type, ``table`` / ``rule_priority``
    say which lookup answered, ``route`` is the matching route."""

    _RUST: ClassVar[str] = "FibDecision"
    kind: str
    table: Optional[int]
    rule_priority: Optional[int]
    route: Optional[Route]
    dev: Optional[str]
    prefsrc: Optional[str]
    gateway: Optional[str]
    multipath: bool


_ALL: Tuple[type, ...] = (
    LinkStats,
    Interface,
    Address,
    Neighbor,
    NextHop,
    Route,
    Rule,
    ConfValues,
    InterfaceConf,
    Tuning,
    SysctlView,
    DcbApp,
    Qos,
    RdmaCmPort,
    GidEntry,
    RdmaPort,
    RdmaDevice,
    SnapshotWarning,
    VerbsGid,
    VerbsPort,
    VerbsDevice,
    NoRdma,
    VerbsView,
    HostState,
    NicDesired,
    DesiredState,
    Change,
    Plan,
    RouteDecision,
    ArpReply,
    ArpProbeResult,
    RenderedFile,
    FileDiff,
    WriteReport,
    LabNic,
    Subject,
    Remediation,
    Finding,
    FindingCounts,
    NcclVar,
    PortRef,
    GidChoice,
    PickOutcome,
    GidPick,
    NcclAdvice,
    GidRow,
    Ibdev2NetdevRow,
    HostSummary,
    FleetReport,
    ApplyReport,
    RollbackReport,
    FibDecision,
)


def _defaults(cls: type) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
    return out


def _register_all() -> None:
    classes = {c._RUST: (c, _defaults(c)) for c in _ALL}  # type: ignore[attr-defined]
    _roce_net._register(classes, dict(ERROR_CLASSES), RoceNetError)


_register_all()
# isinstance(state.routes, collections.abc.Sequence) holds for the lazy sequence too.
collections.abc.Sequence.register(_roce_net.RouteSeq)
