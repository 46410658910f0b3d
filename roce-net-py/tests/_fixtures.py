"""Snapshot documents for tests: every field populated, in the library's JSON schema."""

from __future__ import annotations

import copy
from typing import Any, Dict

_CONF = {
    "arp_ignore": 0,
    "arp_announce": 0,
    "arp_filter": 0,
    "rp_filter": 1,
    "accept_local": 0,
    "arp_notify": None,
}


def _stats(n: int) -> Dict[str, int]:
    return {
        k: n
        for k in (
            "rx_packets",
            "tx_packets",
            "rx_bytes",
            "tx_bytes",
            "rx_errors",
            "tx_errors",
            "rx_dropped",
            "tx_dropped",
        )
    }


def state_doc(nics: int = 4, extra_routes: int = 0) -> Dict[str, Any]:
    """A four-NIC host in one /24 (the seed scenario), plus `extra_routes` /32 routes."""
    ifs = [
        {
            "index": 1,
            "name": "lo",
            "kind": None,
            "mac": "00:00:00:00:00:00",
            "mtu": 65536,
            "admin_up": True,
            "oper_state": "UNKNOWN",
            "carrier": True,
            "master": None,
            "stats": _stats(0),
        }
    ]
    addrs = []
    routes = []
    rules = [
        {
            "family": "inet",
            "priority": 0,
            "src": None,
            "dst": None,
            "iif": None,
            "oif": None,
            "fwmark": None,
            "fwmask": None,
            "tos": 0,
            "invert": False,
            "table": 255,
            "action": "totable",
            "protocol": 2,
        },
        {
            "family": "inet",
            "priority": 32000,
            "src": None,
            "dst": None,
            "iif": None,
            "oif": None,
            "fwmark": None,
            "fwmask": None,
            "tos": 0,
            "invert": False,
            "table": 0,
            "action": "goto",
            "goto": 32766,
            "protocol": 0,
        },
    ]
    neigh = []
    conf_ifs = {}
    rdma = []
    for i in range(nics):
        name = f"eth{i}"
        ip = f"198.18.0.{11 + i}"
        ifs.append(
            {
                "index": 10 + i,
                "name": name,
                "kind": "veth",
                "mac": f"02:aa:00:00:00:{i:02x}",
                "mtu": 9000,
                "admin_up": True,
                "oper_state": "UP",
                "carrier": True,
                "master": None,
                "stats": _stats(i),
            }
        )
        addrs.append(
            {
                "ifname": name,
                "ifindex": 10 + i,
                "address": ip,
                "prefix_len": 24,
                "scope": "global",
                "label": name,
                "secondary": False,
            }
        )
        routes.append(
            {
                "family": "inet",
                "table": 254,
                "dst": "198.18.0.0/24",
                "type": "unicast",
                "dev": name,
                "prefsrc": ip,
                "gateway": None,
                "scope": "link",
                "protocol": 2,
                "metric": None,
                "tos": 0,
            }
        )
        neigh.append(
            {
                "ifname": name,
                "ifindex": 10 + i,
                "ip": "198.18.0.100",
                "mac": "02:bb:00:00:00:01",
                "state": ["REACHABLE"],
                "router": False,
            }
        )
        conf_ifs[name] = {"configured": dict(_CONF), "effective": dict(_CONF)}
        rdma.append(
            {
                "name": f"mlx5_{i}",
                "node_guid": f"b8ce:f603:00a1:00{i:02x}",
                "fw_ver": "28.39.1002",
                "hca_type": "MT4129",
                "pci_addr": f"0000:{0x41 + i:02x}:00.0",
                "netdevs": [name],
                "ports": [
                    {
                        "port": 1,
                        "state": "ACTIVE",
                        "phys_state": "LinkUp",
                        "link_layer": "Ethernet",
                        "rate": "400 Gb/sec (4X NDR)",
                        "netdev": name,
                        "active_mtu": 4096,
                        "gids": [
                            {
                                "index": 3,
                                "gid": f"::ffff:{ip}",
                                "gid_type": "roce_v2",
                                "netdev": name,
                                "ipv4": ip,
                            },
                            {
                                "index": 4,
                                "gid": "fe80::1",
                                "gid_type": {"other": "weird"},
                                "netdev": name,
                                "ipv4": None,
                            },
                        ],
                        "counters": {"port_rcv_data": 12},
                        "hw_counters": {"out_of_sequence": 0},
                    }
                ],
            }
        )
    routes.append(
        {
            "family": "inet",
            "table": 1000,
            "dst": "0.0.0.0/0",
            "type": "unicast",
            "dev": None,
            "prefsrc": None,
            "gateway": None,
            "scope": "global",
            "protocol": 201,
            "metric": 100,
            "tos": 0,
            "multipath": [
                {"gateway": "198.18.0.1", "dev": "eth0", "weight": 1},
                {"gateway": "198.18.0.1", "dev": "eth1", "weight": 2},
            ],
        }
    )
    for k in range(extra_routes):
        routes.append(
            {
                "family": "inet",
                "table": 500 + (k % 8),
                "dst": f"198.19.{(k >> 8) & 255}.{k & 255}/32",
                "type": "unicast",
                "dev": f"eth{k % max(nics, 1)}",
                "prefsrc": None,
                "gateway": "198.18.0.1",
                "scope": "global",
                "protocol": 4,
                "metric": 1024,
                "tos": 0,
            }
        )
    doc = {
        "schema_version": 1,
        "hostname": "gpu-node-1",
        "netns": "rnt-py-fixture",
        "captured_at": 1764480000,
        "interfaces": ifs,
        "addresses": addrs,
        "neighbors": neigh,
        "routes": routes,
        "rules": rules,
        "sysctls": {
            "all": dict(_CONF),
            "default": dict(_CONF),
            "interfaces": conf_ifs,
            "tuning": {
                "netdev_max_backlog": 1000,
                "rmem_max": 212992,
                "wmem_max": 212992,
                "udp_mem": [1, 2, 3],
            },
        },
        "table_names": {"1000": "rn_eth0", "254": "main"},
        "rdma": rdma,
        "warnings": [{"source": "/sys/class/infiniband", "message": "partial"}],
    }
    return copy.deepcopy(doc)
