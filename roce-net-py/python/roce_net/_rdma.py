"""``probe_rdma`` and the verbs view: RDMA traffic between two hosts.

``probe_rdma(host, peer, ...)`` runs one client session against a
``probe_rdma_server`` (or ``roce-net probe rdma --server``) at ``peer``: the
device, port and GID index come from ``source`` (default: the route's source for
``peer``), an RC queue pair moves data both ways, and the result says latency and
bandwidth, or the failure's likely cause with evidence. Every call releases the
GIL. See docs/rdma-probe.md.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, fields
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from . import _roce_net
from ._roce_net import Host
from ._types import VerbsView

_Ip = Union[str, ipaddress.IPv4Address, ipaddress.IPv6Address]


def _plain(v: Any) -> Any:
    """Tuples from the native side back to lists, dataclasses to dicts."""
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if hasattr(v, "to_dict"):
        return v.to_dict()
    return v


class _Data:
    """to_dict / to_json for the frozen results below."""

    def to_dict(self) -> Dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]

    def to_json(self, *, indent: Optional[int] = None) -> str:
        """Compact JSON of :meth:`to_dict`; indented by ``indent`` spaces if given."""
        if indent is None:
            return json.dumps(self.to_dict(), separators=(",", ":"), default=str)
        return json.dumps(self.to_dict(), indent=indent, default=str)


@dataclass(frozen=True)
class RdmaEndpoint(_Data):
    """One end of a probe: its device, port, GID and queue pair."""

    host: str
    device: str
    port: int
    gid_index: int
    gid: str
    address: str
    netdev: Optional[str]
    mac: Optional[str]
    active_mtu: Optional[int]
    qpn: int

    @classmethod
    def _from(cls, d: Optional[Mapping[str, Any]]) -> Optional[RdmaEndpoint]:
        if d is None:
            return None
        kw: Dict[str, Any] = {f.name: d.get(f.name) for f in fields(cls)}
        return cls(**kw)


@dataclass(frozen=True)
class RdmaLatency(_Data):
    """Send/recv ping-pong: half the round trip, microseconds."""

    size: int
    iterations: int
    min_us: float
    median_us: float
    p99_us: float
    max_us: float

    @classmethod
    def _from(cls, d: Optional[Mapping[str, Any]]) -> Optional[RdmaLatency]:
        if d is None:
            return None
        kw: Dict[str, Any] = {f.name: d[f.name] for f in fields(cls)}
        return cls(**kw)


@dataclass(frozen=True)
class RdmaBandwidth(_Data):
    """RDMA writes in one direction; ``verified``: the receiver checked the data."""

    size: int
    iterations: int
    bytes: int
    seconds: float
    gbit_per_s: float
    verified: bool

    @classmethod
    def _from(cls, d: Optional[Mapping[str, Any]]) -> Optional[RdmaBandwidth]:
        if d is None:
            return None
        kw: Dict[str, Any] = {f.name: d[f.name] for f in fields(cls)}
        return cls(**kw)


@dataclass(frozen=True)
class RdmaFailure(_Data):
    """Where a probe failed, the raw value, and its likely cause with evidence."""

    stage: str
    value: Mapping[str, Any]
    cause: str
    message: str
    evidence: Mapping[str, Any]
    fix: Tuple[str, ...]
    peer: Optional[str]

    @classmethod
    def _from(cls, d: Optional[Mapping[str, Any]]) -> Optional[RdmaFailure]:
        if d is None:
            return None
        return cls(
            stage=d["stage"],
            value=dict(d["value"]),
            cause=d["cause"],
            message=d["message"],
            evidence=dict(d["evidence"]),
            fix=tuple(d["fix"]),
            peer=d.get("peer"),
        )


@dataclass(frozen=True)
class RdmaProbeResult(_Data):
    """One probe session (``role`` is ``client`` or ``server``)."""

    role: str
    ok: bool
    local: Optional[RdmaEndpoint]
    peer: Optional[RdmaEndpoint]
    peer_tcp: Optional[str]
    path_mtu: Optional[int]
    latency: Optional[RdmaLatency]
    write_to_peer: Optional[RdmaBandwidth]
    write_from_peer: Optional[RdmaBandwidth]
    failure: Optional[RdmaFailure]
    notes: Tuple[str, ...]
    elapsed_ms: int

    @classmethod
    def _from(cls, d: Mapping[str, Any]) -> "RdmaProbeResult":
        return cls(
            role=d["role"],
            ok=d["ok"],
            local=RdmaEndpoint._from(d.get("local")),
            peer=RdmaEndpoint._from(d.get("peer")),
            peer_tcp=d.get("peer_tcp"),
            path_mtu=d.get("path_mtu"),
            latency=RdmaLatency._from(d.get("latency")),
            write_to_peer=RdmaBandwidth._from(d.get("write_to_peer")),
            write_from_peer=RdmaBandwidth._from(d.get("write_from_peer")),
            failure=RdmaFailure._from(d.get("failure")),
            notes=tuple(d.get("notes", ())),
            elapsed_ms=d["elapsed_ms"],
        )


@dataclass(frozen=True)
class RdmaServerResult(_Data):
    """A server run: one result per client session."""

    listen: str
    ok: bool
    stopped: str
    sessions: Tuple[RdmaProbeResult, ...]

    @classmethod
    def _from(cls, d: Mapping[str, Any]) -> "RdmaServerResult":
        return cls(
            listen=d["listen"],
            ok=d["ok"],
            stopped=d["stopped"],
            sessions=tuple(RdmaProbeResult._from(s) for s in d["sessions"]),
        )


def probe_rdma(
    host: Host,
    peer: _Ip,
    *,
    source: Optional[_Ip] = None,
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
    libibverbs: Optional[str] = None,
) -> RdmaProbeResult:
    """Probe RDMA to the server at ``peer`` from ``host`` (GIL released).

    Raises NoRdmaError when RDMA is unavailable here (no libibverbs, no kernel
    support, no devices, no /dev/infiniband), InvalidInputError / NotFoundError
    for options that do not fit the host. An RDMA failure is a result with
    ``ok=False`` and ``failure`` set.
    """
    d = json.loads(_roce_net._probe_rdma(
        host,
        peer,
        source=source,
        device=device,
        port=port,
        gid_index=gid_index,
        tcp_port=tcp_port,
        size=size,
        iterations=iterations,
        latency_size=latency_size,
        latency_iterations=latency_iterations,
        mtu=mtu,
        timeout=timeout,
        libibverbs=libibverbs,
    ))
    return RdmaProbeResult._from(d)


def probe_rdma_server(
    host: Host,
    *,
    source: _Ip,
    device: Optional[str] = None,
    port: Optional[int] = None,
    gid_index: Optional[int] = None,
    tcp_port: int = 18520,
    clients: int = 1,
    duration: float = 60.0,
    timeout: float = 10.0,
    libibverbs: Optional[str] = None,
) -> RdmaServerResult:
    """Serve ``probe_rdma`` clients from ``source`` until ``clients`` sessions
    ran or ``duration`` seconds passed (GIL released)."""
    d = json.loads(_roce_net._probe_rdma_server(
        host,
        source=source,
        device=device,
        port=port,
        gid_index=gid_index,
        tcp_port=tcp_port,
        clients=clients,
        duration=duration,
        timeout=timeout,
        libibverbs=libibverbs,
    ))
    return RdmaServerResult._from(d)


def verbs_view(host: Host, *, libibverbs: Optional[str] = None) -> VerbsView:
    """Devices, ports and GID tables through libibverbs; without RDMA,
    ``unavailable`` holds ``reason`` (``no_library``, ``no_kernel_support``,
    ``no_devices``, ``no_device_files``) and ``detail``. GIL released."""
    return _roce_net._verbs_view(host, libibverbs=libibverbs)
