# Hand-written stub of the native module. Checked against the built module by
# `python -m mypy.stubtest roce_net` (scripts/test-python.sh): keep in step.
import os
import pathlib
import ipaddress
from types import TracebackType
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    SupportsIndex,
    Tuple,
    Type,
    Union,
    final,
    overload,
)

from ._types import (
    AppliedPersist,
    VerbsView,
    RdmaProbeResult,
    RdmaServerResult,
    ApplyReport,
    FibDecision,
    ArpProbeResult,
    NdProbeResult,
    Finding,
    FleetReport,
    MeshNode,
    MeshNodePlan,
    MeshNodeResult,
    MeshPlan,
    MeshReport,
    GidRow,
    Ibdev2NetdevRow,
    NcclAdvice,
    RollbackReport,
    HostState,
    LabNic,
    Plan,
    RenderedFile,
    Route,
    RouteDecision,
    WriteReport,
)

__all__ = [
    "__version__",
    "SCHEMA_VERSION",
    "_register",
    "_schema",
    "NativeState",
    "RouteSeq",
    "NativePlan",
    "Host",
    "_from_json",
    "load_snapshot",
    "parse_snapshot",
    "save_snapshot",
    "Policy",
    "plan",
    "_render_diff",
    "_describe",
    "_notes",
    "render_persistence",
    "write_persistence",
    "persistence_backends",
    "Lab",
    "doctor",
    "nccl_env",
    "nccl_check",
    "fleet_report",
    "render_metrics",
    "route_lookup",
    "probe_rdma",
    "probe_rdma_server",
    "verbs_view",
    "show_gids",
    "ibdev2netdev",
    "render_show_gids",
    "render_ibdev2netdev",
    "mesh_node",
    "mesh_plan",
    "mesh_node_plan",
    "mesh_node_plans",
    "mesh_run",
    "mesh_report",
]

__version__: str
SCHEMA_VERSION: int

_Path = Union[str, os.PathLike[str]]
_IP = Union[str, ipaddress.IPv4Address, ipaddress.IPv6Address]

def _register(classes: Dict[str, Any], errors: Dict[str, Any], base_error: Type[BaseException]) -> None: ...
def _schema() -> Dict[str, Any]:
    """What the binding returns: every exported type (name, shape, serde fields),
    their JSON Schema definitions and the library's error kinds."""
def _from_json(type_name: str, text: str) -> Any: ...
def load_snapshot(path: _Path) -> HostState:
    """Read a snapshot JSON file (``roce-net snapshot --json``). Raises ParseError / NotFoundError."""
def save_snapshot(state: HostState, path: _Path, *, pretty: bool = False) -> None:
    """Write a snapshot as ``roce-net snapshot -o PATH`` does: compact JSON unless
    ``pretty``, gzip when the name ends in ``.gz``, atomically (temporary file,
    rename). Readable by ``load_snapshot`` and the CLI. Raises IoError."""
def parse_snapshot(text: str) -> HostState:
    """Parse snapshot JSON text. Raises ParseError."""

@final
class NativeState:
    def to_json(self, indent: Optional[int] = None) -> str: ...

@final
class RouteSeq(Sequence[Route]):
    """``HostState.routes`` of a snapshot from the library: immutable, each
    ``Route`` built when it is read; equal to a tuple of the same routes."""

    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: SupportsIndex, /) -> Route: ...
    @overload
    def __getitem__(self, index: slice, /) -> Tuple[Route, ...]: ...
    def __iter__(self) -> Iterator[Route]: ...
    def __reversed__(self) -> Iterator[Route]: ...
    def __contains__(self, value: object, /) -> bool: ...
    def count(self, value: object) -> int: ...
    def index(self, value: object, start: Optional[int] = None, stop: Optional[int] = None) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> Tuple[Any, Tuple[Tuple[Route, ...]]]: ...

@final
class NativePlan:
    def to_json(self) -> str: ...

@final
class Host:
    """A handle on one host's networking, scoped to a network namespace.

    ``Host()`` is the caller's namespace; ``Host(netns="name")`` a named one
    (``/run/netns/name``, NotFoundError if missing); ``netns_path=`` any namespace
    file. ``sysfs_root`` / ``etc_root`` redirect where RDMA devices and routing
    table names are read from (fixtures, containers).
    """

    def __new__(
        cls,
        netns: Optional[str] = None,
        sysfs_root: Optional[_Path] = None,
        *,
        netns_path: Optional[_Path] = None,
        etc_root: Optional[_Path] = None,
    ) -> Host: ...
    def __getnewargs_ex__(self) -> Tuple[Tuple[()], Dict[str, Any]]:
        """Pickled as the arguments that open it: unpickled (in a worker process,
        say) it opens the namespace again by name or file."""
    @property
    def netns(self) -> Optional[str]: ...
    @property
    def netns_path(self) -> Optional[pathlib.Path]: ...
    @property
    def sysfs_root(self) -> pathlib.Path: ...
    @property
    def etc_root(self) -> pathlib.Path: ...
    def snapshot(self) -> HostState:
        """Capture links, addresses, neighbours, routes, rules, sysctls and RDMA devices."""
    def route_get(self, dst: _IP, src: Optional[_IP] = None) -> RouteDecision:
        """Where a packet to ``dst`` (from ``src``) goes, as ``ip route get`` answers it."""
    def probe_arp(
        self,
        dev: str,
        target: Union[str, ipaddress.IPv4Address],
        *,
        count: int = 3,
        timeout: float = 2.0,
        source: Optional[Union[str, ipaddress.IPv4Address]] = None,
    ) -> ArpProbeResult:
        """ARP-probe ``target`` out of ``dev``; every MAC that answers (needs CAP_NET_RAW)."""
    def probe_nd(
        self,
        dev: str,
        target: Union[str, ipaddress.IPv6Address],
        *,
        count: int = 3,
        timeout: float = 2.0,
        source: Optional[Union[str, ipaddress.IPv6Address]] = None,
    ) -> NdProbeResult:
        """ND-probe the IPv6 ``target`` out of ``dev``; every MAC advertised for it (needs CAP_NET_RAW)."""
    def apply(
        self,
        plan: Plan,
        *,
        confirm_timeout: Optional[float] = None,
        state_dir: Optional[_Path] = None,
    ) -> ApplyReport:
        """Apply a plan as a transaction (re-plan under the lock, journal, verify, rollback on failure)."""
    def confirm(self, *, state_dir: Optional[_Path] = None) -> None:
        """Confirm an apply made with ``confirm_timeout``."""
    def apply_status(self, *, state_dir: Optional[_Path] = None) -> Optional[Dict[str, Any]]:
        """The last apply's journal as a dict (``state``, ``steps``...), or None."""
    def rollback(self, *, state_dir: Optional[_Path] = None) -> RollbackReport:
        """Undo the last apply from its journal (and put back what ``persist_for_apply`` wrote for it)."""
    def persist_for_apply(
        self,
        plan: Plan,
        backend: Optional[str] = None,
        *,
        root: Optional[_Path] = None,
        state_dir: Optional[_Path] = None,
        switch_backend: bool = False,
        dry_run: bool = False,
    ) -> AppliedPersist:
        """Write the plan's boot-persistent files under ``root`` as ``roce-net persist``
        does; recorded for the last (committed) apply, so ``rollback()`` puts them back."""
    def _watchdog(
        self,
        *,
        state_dir: Optional[_Path] = None,
        apply_id: Optional[str] = None,
        deadline: Optional[int] = None,
        cookie: Optional[int] = None,
        boot_id: Optional[str] = None,
    ) -> Any: ...

@final
class Policy:
    """A validated roce-net policy. Build with ``from_dict`` / ``from_yaml`` /
    ``from_json`` / ``load``; errors raise PolicyError with the field path."""

    def __new__(cls) -> Policy: ...
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy: ...
    @classmethod
    def from_yaml(cls, text: str) -> Policy: ...
    @classmethod
    def from_json(cls, text: str) -> Policy: ...
    @classmethod
    def load(cls, path: _Path) -> Policy: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def to_json(self, *, indent: Optional[int] = None) -> str:
        """Compact JSON (every field, defaults filled in); indented by ``indent`` spaces if given."""
    def __reduce__(self) -> Tuple[Any, Tuple[str]]:
        """Pickled and copied as its JSON, read back with ``Policy.from_json``."""

def plan(state: HostState, policy: Policy) -> Plan:
    """The ordered changes that make ``state`` comply with ``policy`` (pure, no I/O)."""
def _render_diff(plan: Plan) -> str: ...
def _describe(plan: Plan) -> Tuple[str, ...]: ...
def _notes(plan: Plan) -> Tuple[str, ...]: ...
def render_persistence(
    plan: Plan,
    backend: str,
    *,
    root: Optional[_Path] = None,
    state: Optional[HostState] = None,
    networkd_files: Optional[Mapping[str, str]] = None,
    nm_connections: Optional[Mapping[str, str]] = None,
    netplan_devices: Optional[Mapping[str, Sequence[str]]] = None,
    ifupdown_ifaces: Optional[Sequence[str]] = None,
) -> Tuple[RenderedFile, ...]:
    """Boot-persistent files for the plan's desired state (``persistence_backends()`` names).

    With ``root`` (the node's ``/``) and ``state`` (its snapshot), the name each NIC
    has in the backend's configuration is discovered; the maps give them
    explicitly (``nm_connections``: ifname -> profile UUID). A NIC the backend
    does not configure raises ``invalid_input``."""
def write_persistence(
    files: Iterable[RenderedFile], root: Optional[_Path] = None, dry_run: bool = False
) -> WriteReport:
    """Write rendered files under ``root`` (default ``/``) safely: all checked first,
    atomic replace, backups kept; ``dry_run`` only reports."""
def persistence_backends() -> List[str]: ...

@final
class Lab:
    """Throwaway network namespaces (root only), removed on ``close()`` / ``with`` exit."""

    @classmethod
    def seed(cls, nics: int = 4, *, tag: str = "py", family: str = "ipv4") -> Lab:
        """The seed scenario: host namespace with ``nics`` NICs in 198.18.0.0/24 and a peer;
        ``family="ipv6"`` addresses them in fd00:198:18::/64 instead (``roce-net lab
        --ipv6``), ``"both"`` in both."""
    @classmethod
    def fleet(cls, hosts: int = 8, nics: int = 2, *, tag: str = "py-fleet") -> Lab:
        """``hosts`` host namespaces with ``nics`` NICs each, all in 198.18.0.0/16 on one bridge."""
    @staticmethod
    def _interrupt() -> Tuple[List[str], List[Tuple[str, str]]]:
        """Remove every lab namespace of this process (the SIGTERM/SIGHUP handler's step)."""
    @property
    def fleet_hosts(self) -> Tuple[str, ...]: ...
    @property
    def prefix(self) -> str: ...
    @property
    def namespaces(self) -> Tuple[str, ...]: ...
    @property
    def host_ns(self) -> Optional[str]: ...
    @property
    def peer_ns(self) -> Optional[str]: ...
    @property
    def switch_ns(self) -> Optional[str]: ...
    @property
    def nics(self) -> Tuple[LabNic, ...]: ...
    @property
    def peer_nic(self) -> Optional[LabNic]: ...
    @property
    def closed(self) -> bool: ...
    def host(self) -> Host: ...
    def peer(self) -> Host: ...
    def close(self) -> None: ...
    def __enter__(self) -> Lab: ...
    def __exit__(
        self,
        *_exc: Union[Optional[Type[BaseException]], Optional[BaseException], Optional[TracebackType]],
    ) -> bool: ...

def doctor(state: HostState, options: Optional[Mapping[str, Any]] = None) -> Tuple[Finding, ...]:
    """Every check over a snapshot (pure); ``options`` overrides DoctorOptions fields."""
def nccl_env(state: HostState, *, nccl_version: Optional[str] = None) -> NcclAdvice:
    """NCCL environment derived from the GID tables, each value with its reason
    (``roce-net nccl-env``); ``nccl_version`` (``"2.30"``) the release the job uses."""
def nccl_check(
    state: HostState,
    env: Optional[Mapping[str, str]] = None,
    *,
    env_file: Optional[_Path] = None,
    nccl_version: Optional[str] = None,
) -> Tuple[Finding, ...]:
    """The NCCL environment a job has (``env``, the nccl.conf-style ``env_file``, or
    this process's ``NCCL_*`` variables) checked against the host
    (``roce-net nccl-env --check``). ``TypeError`` names a key or value of
    ``env`` that is not a ``str`` (environment values are strings: ``"3"``)."""
def fleet_report(
    states: Iterable[HostState], options: Optional[Mapping[str, Any]] = None
) -> FleetReport:
    """Per-host summaries and cross-host findings over many snapshots."""
def render_metrics(state: HostState, options: Optional[Mapping[str, Any]] = None) -> str:
    """Prometheus text exposition format for the snapshot and its doctor findings."""
def route_lookup(
    state: HostState,
    dst: _IP,
    src: Optional[_IP] = None,
    *,
    iif: Optional[str] = None,
    oif: Optional[str] = None,
    fwmark: int = 0,
) -> FibDecision:
    """Where the kernel would send the flow, computed offline from the snapshot
    (like ``ip route get`` on that host). NotFoundError when it would fail."""

# probe rdma and the verbs view (GIL released).
def probe_rdma(
    host: Host,
    peer: _IP,
    *,
    source: Optional[_IP] = None,
    device: Optional[str] = None,
    port: Optional[int] = None,
    gid_index: Optional[int] = None,
    tcp_port: int = 18520,
    size: int = 65536,
    iterations: int = 1000,
    latency_size: int = 64,
    latency_iterations: int = 1000,
    mtu: Optional[int] = None,
    timeout: float = 10.0,
    libibverbs: Optional[_Path] = None,
    token: Union[str, bytes, None] = None,
    token_file: Optional[_Path] = None,
) -> RdmaProbeResult:
    """Probe RDMA to the server at ``peer`` from ``host``: an RC queue pair
    moves data both ways. NoRdmaError when RDMA is unavailable here; an RDMA
    failure is a result with ``ok=False`` and ``failure`` set (the server's
    token differing from ``token``/``token_file``: cause ``token-mismatch``)."""
def probe_rdma_server(
    host: Host,
    *,
    source: _IP,
    device: Optional[str] = None,
    port: Optional[int] = None,
    gid_index: Optional[int] = None,
    tcp_port: int = 18520,
    clients: int = 1,
    duration: float = 60.0,
    timeout: float = 10.0,
    libibverbs: Optional[_Path] = None,
    listen: Optional[_IP] = None,
    token: Union[str, bytes, None] = None,
    token_file: Optional[_Path] = None,
    size: int = 65536,
    latency_size: int = 64,
) -> RdmaServerResult:
    """Serve ``probe_rdma`` clients from ``source`` until ``clients`` sessions
    ran or ``duration`` seconds passed; listens on ``source`` unless ``listen``
    says otherwise. A connection counts as a client only once it proved the
    token and asked for no more than ``size``/``latency_size``; the others are
    in ``rejected``."""
def verbs_view(host: Host, *, libibverbs: Optional[_Path] = None) -> VerbsView:
    """Devices, ports and GID tables through libibverbs; without RDMA,
    ``unavailable`` holds ``reason`` and ``detail``."""

# The CLI's read-only RDMA views (`roce-net gids`, `roce-net ibdev2netdev`).
def show_gids(
    state: HostState, device: Optional[str] = None, port: Optional[int] = None
) -> Tuple[GidRow, ...]:
    """The rows mlnx-tools' ``show_gids [DEV [PORT]]`` prints (``roce-net --json gids``).
    NotFoundError for a device or port the snapshot lacks."""
def ibdev2netdev(state: HostState) -> Tuple[Ibdev2NetdevRow, ...]:
    """Each RDMA port and its netdev, as OFED's ``ibdev2netdev`` maps them."""
def render_show_gids(rows: Iterable[Union[GidRow, Mapping[str, Any]]]) -> str:
    """The rows as ``show_gids`` prints them (``roce-net gids``)."""
def render_ibdev2netdev(
    rows: Iterable[Union[Ibdev2NetdevRow, Mapping[str, Any]]], verbose: bool = False
) -> str:
    """The rows as ``ibdev2netdev`` (``-v``: ``verbose``) prints them."""

# The cluster mesh (`roce-net mesh node/plan/run/report`, docs/mesh.md). A plan,
# a node's part or a result is taken as its class, its plain data (to_dict(),
# what Ansible registers) or JSON text.
_MeshDoc = Union[str, Mapping[str, Any], MeshPlan, MeshNodePlan]
def mesh_node(
    state: HostState,
    *,
    rail_by: str = "auto",
    family: Optional[str] = None,
    nics: Optional[Sequence[str]] = None,
) -> MeshNode:
    """The node's entry of a mesh inventory (``roce-net mesh node``): its NICs in
    scope with an address, MAC, MTU and rail (``rail_by``: ``auto``, ``subnet``,
    ``index``; ``family``: ``ipv4``, ``ipv6`` or None), and in ``unprobed`` those
    without an address, which the report names; ``nics`` names NICs beyond the
    scope (``--nic``: the rails of a host without RDMA devices)."""
def mesh_plan(
    nodes: Iterable[Union[HostState, MeshNode, Mapping[str, Any], str]],
    *,
    peers: int = 2,
    rounds: int = 3,
    all_pairs: bool = False,
    intra_host: bool = True,
    rotation: int = 0,
    levels: Optional[Sequence[str]] = None,
    port: int = 18530,
    start_in: float = 15.0,
    neighbor_ms: int = 1000,
    ip_ms: int = 1000,
    rdma_ms: int = 10000,
    rdma_size: int = 65536,
    rdma_iterations: int = 4,
    rdma_latency_iterations: int = 16,
    rail_by: str = "auto",
    family: Optional[str] = None,
) -> MeshPlan:
    """The schedule over ``nodes`` (snapshots or ``MeshNode`` entries), round 1
    ``start_in`` seconds from now, with a fresh token (``roce-net mesh plan``);
    ``levels`` of ``neighbor``, ``ip``, ``rdma`` (None: all three).
    InvalidInputError names an option out of range or a duplicate address."""
def mesh_node_plan(plan: _MeshDoc, node: str) -> MeshNodePlan:
    """One node's part of a plan; ``.schedule`` is what it would probe and
    answer (``roce-net mesh run --check``). NotFoundError for a node the plan lacks."""
def mesh_node_plans(plan: Union[str, Mapping[str, Any], MeshPlan]) -> Tuple[MeshNodePlan, ...]:
    """Every node's part of the plan, node after node."""
def mesh_run(
    host: Host,
    plan: _MeshDoc,
    *,
    node: Optional[str] = None,
    libibverbs: Optional[_Path] = None,
) -> MeshNodeResult:
    """Run this node's part of the plan (``roce-net mesh run``, GIL released): its
    responder on every NIC and its probes in the plan's slots; returns after its
    last slot. ``node`` names it as the plan does (default: its host name,
    ``hostname:netns`` in a namespace). The RDMA level reads RDMA devices from
    the host's ``sysfs_root`` and loads ``libibverbs`` (a soname or path instead
    of ``libibverbs.so.1``), as ``probe_rdma``."""
def mesh_report(
    plan: Union[str, Mapping[str, Any], MeshPlan],
    results: Iterable[Union[str, Mapping[str, Any], MeshNodeResult]],
) -> MeshReport:
    """The merge of every node's result (``roce-net mesh report``): the verdict
    and one fault per broken element (``element``, ``host``, ``nic``, ``cause``,
    ``evidence``, ``fix``)."""
