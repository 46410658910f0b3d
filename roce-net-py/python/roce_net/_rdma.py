"""``probe_rdma`` and the verbs view: RDMA traffic between two hosts.

``probe_rdma(host, peer, ...)`` runs one client session against a
``probe_rdma_server`` (or ``roce-net probe rdma --server``) at ``peer``: the
device, port and GID index come from ``source`` (default: the route's source for
``peer``), an RC queue pair moves data both ways, and the result says latency and
bandwidth, or the failure's likely cause with evidence. Every call releases the
GIL. The results are the frozen classes of ``roce_net._types`` (generated from
the library's report structs, as every result class is), built by the native
module. See docs/rdma-probe.md.
"""

from __future__ import annotations

import ipaddress
from typing import Optional, Union

from . import _roce_net
from ._roce_net import Host
from ._types import (
    RdmaBandwidth,
    RdmaEndpoint,
    RdmaFailure,
    RdmaLatency,
    RdmaProbeResult,
    RdmaServerResult,
    VerbsView,
)

__all__ = ["probe_rdma", "probe_rdma_server", "verbs_view"]

_Ip = Union[str, ipaddress.IPv4Address, ipaddress.IPv6Address]


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
    return _roce_net._probe_rdma(
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
    )


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
    return _roce_net._probe_rdma_server(
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
    )


def verbs_view(host: Host, *, libibverbs: Optional[str] = None) -> VerbsView:
    """Devices, ports and GID tables through libibverbs; without RDMA,
    ``unavailable`` holds ``reason`` (``no_library``, ``no_kernel_support``,
    ``no_devices``, ``no_device_files``) and ``detail``. GIL released."""
    return _roce_net._verbs_view(host, libibverbs=libibverbs)
