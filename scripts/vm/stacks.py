"""A node whose NICs its admin configures with one of the network stacks a GPU
node runs (docs/persistence.md), for the reboot scenarios of the VM tier
(tests/vm/test_stacks.py, docs/vm.md): systemd-networkd alone, netplan with
the networkd renderer, NetworkManager running as a service, ifupdown.

The node has two RDMA NICs on one subnet (eth0, eth1: rxe0, rxe1) and a
management NIC (eth2) on another bridge, where the harness reaches it over SSH.
The admin's configuration brings all three up at boot, as Debian leaves such a
node: ARP flux, no source routing. Soft-RoCE stands in for the NICs' own RDMA
driver: a unit the admin enabled adds rxeK on ethK at every boot.
"""

from __future__ import annotations

import json
import time
from typing import Optional

from seed import RN, Net
from vmbed import Bed, Guest

RDMA = [("eth0", "198.18.2.11"), ("eth1", "198.18.2.12")]
# Every scenario runs dual-stack: each RDMA NIC also has a ULA in one /64,
# given by the admin's configuration like the IPv4 address (the management
# NIC has none).
RDMA6 = [("eth0", "fd00:198:18:2::11"), ("eth1", "fd00:198:18:2::12")]
PREFIX6 = 64
PREFIX6_NET = "fd00:198:18:2::/64"
MGMT = ("eth2", "198.19.2.11")
NODE_MACS = ["52:54:00:12:02:11", "52:54:00:12:02:12", "52:54:00:13:02:11"]
PEER_MACS = ["52:54:00:12:02:21", "52:54:00:13:02:21"]
PEER_IP = "198.18.2.21"
PEER_IP6 = "fd00:198:18:2::21"
PEER_MGMT = "198.19.2.21"
HARNESS_MGMT = "198.19.2.1/24"
NET = Net(tuple(ip for _n, ip in RDMA), PEER_IP)
STACKS = ["networkd", "netplan", "networkmanager", "ifupdown"]
# The policy every scenario runs every roce-net command with: the
# defaults (both families) plus the IPv6 sysctls docs/policy.md shows for RoCE
# NICs, so that persist writes some for the boot to bring back.
IPV6_SYSCTLS = {"accept_ra_defrtr": 0, "ndisc_notify": 1, "keep_addr_on_down": 1}
POLICY_PATH = "/root/roce-net.yaml"
POLICY = "ipv6:\n" + "".join(f"  {k}: {v}\n" for k, v in IPV6_SYSCTLS.items())

# Every service a stack needs enabled, as its admin would have it.
UNITS = {
    "networkd": ["systemd-networkd.service"],
    "netplan": ["systemd-networkd.service"],
    "networkmanager": ["NetworkManager.service"],
    "ifupdown": ["networking.service"],
}
ALL_UNITS = sorted({u for us in UNITS.values() for u in us})

# The script the admin's unit runs. It waits for each NIC (the unit's ordering
# after the device units does not hold once a device job times out on a slow
# boot) and logs what it did to the journal, which `seed.wait_active` shows
# when the ports do not come.
RXE_SCRIPT = """#!/bin/sh
modprobe rdma_rxe || echo "rnt-rxe: modprobe rdma_rxe failed"
for k in 0 1; do
    i=0
    while [ ! -e /sys/class/net/eth$k ] && [ $i -lt 120 ]; do sleep 1; i=$((i + 1)); done
    if rdma link show rxe$k/1 >/dev/null 2>&1; then
        echo "rnt-rxe: rxe$k already on eth$k"
    elif rdma link add rxe$k type rxe netdev eth$k; then
        echo "rnt-rxe: added rxe$k on eth$k (eth$k seen after $i s)"
    else
        echo "rnt-rxe: rdma link add rxe$k on eth$k failed (eth$k seen after $i s)"
    fi
done
"""

# The unit (the rxe devices at every boot).
RXE_SERVICE = "rnt-rxe.service"

RXE_UNIT = """[Unit]
Description=Soft-RoCE on the RDMA NICs (stands in for their own RDMA driver)
Wants=sys-subsystem-net-devices-eth0.device sys-subsystem-net-devices-eth1.device
After=sys-subsystem-net-devices-eth0.device sys-subsystem-net-devices-eth1.device
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/rnt-rxe
[Install]
WantedBy=multi-user.target
"""

# The admin's files, per stack: path -> content. Mode 0600 where the tool
# insists on it (netplan warns, NetworkManager ignores group-readable
# keyfiles), 0644 elsewhere (networkd reads its files as its own user).
NICS = [*RDMA, MGMT]
V6 = dict(RDMA6)


def _networkd() -> dict[str, str]:
    return {
        f"/etc/systemd/network/10-{dev}.network": f"[Match]\nName={dev}\n\n[Network]\nAddress={ip}/24\n"
        + (f"Address={V6[dev]}/{PREFIX6}\n" if dev in V6 else "")
        for dev, ip in NICS
    }


def _netplan() -> dict[str, str]:
    eths = "".join(
        f"    {dev}:\n      addresses: [{ip}/24" + (f", \"{V6[dev]}/{PREFIX6}\"" if dev in V6 else "") + "]\n"
        for dev, ip in NICS
    )
    return {"/etc/netplan/50-cluster.yaml": f"network:\n  version: 2\n  renderer: networkd\n  ethernets:\n{eths}"}


def _nm() -> dict[str, str]:
    files = {"/etc/NetworkManager/conf.d/90-cluster.conf": "[main]\nno-auto-default=*\n"}
    for i, (dev, ip) in enumerate(NICS):
        files[f"/etc/NetworkManager/system-connections/{dev}.nmconnection"] = (
            f"[connection]\nid=cluster-{dev}\nuuid=5f0c3a2e-0000-4000-8000-00000000000{i}\n"
            f"type=ethernet\ninterface-name={dev}\nautoconnect=true\n\n"
            f"[ipv4]\nmethod=manual\naddress1={ip}/24\n\n"
            + (f"[ipv6]\nmethod=manual\naddress1={V6[dev]}/{PREFIX6}\n" if dev in V6 else "[ipv6]\nmethod=disabled\n")
        )
    return files


def _ifupdown() -> dict[str, str]:
    body = "auto lo\niface lo inet loopback\n"
    for dev, ip in NICS:
        body += f"\nauto {dev}\niface {dev} inet static\n    address {ip}/24\n"
        if dev in V6:
            body += f"\niface {dev} inet6 static\n    address {V6[dev]}/{PREFIX6}\n"
    return {"/etc/network/interfaces": body}


FILES = {"networkd": _networkd, "netplan": _netplan, "networkmanager": _nm, "ifupdown": _ifupdown}

# Where the admin's and roce-net's files live: compared before persist and
# after `persist --remove`.
CONFIG_DIRS = [
    "/etc/systemd/network",
    "/etc/netplan",
    "/etc/NetworkManager/system-connections",
    "/etc/NetworkManager/conf.d",
    "/etc/network",
    "/etc/sysctl.d",
    "/etc/iproute2",
    "/etc/roce-net",
]


def write_file(path: str, body: str, mode: str = "600") -> str:
    """A shell command that writes BODY to PATH (directories made) with MODE."""
    b = body.replace("'", "'\\''")
    return f"install -d $(dirname {path}) && printf '%s' '{b}' >{path} && chmod {mode} {path}"


def configure(node: Guest, stack: str) -> None:
    """The node as STACK's admin has it: only that stack's files and services
    (the previous scenario's are gone), taking effect at the next boot."""
    lines = [
        # A scenario that failed half way may have left roce-net's files.
        f"{RN} persist --remove >/dev/null 2>&1 || true",
        "[ -x /etc/roce-net/nm-remove.sh ] && sh /etc/roce-net/nm-remove.sh >/dev/null 2>&1; rm -rf /etc/roce-net",
        "set -e",
        "rm -rf /etc/systemd/network/* /etc/netplan/*.yaml",
        "rm -f /etc/NetworkManager/system-connections/* /etc/NetworkManager/conf.d/90-cluster.conf",
        "printf 'auto lo\\niface lo inet loopback\\n' >/etc/network/interfaces",
        "systemctl disable --quiet " + " ".join(ALL_UNITS) + " 2>/dev/null || true",
        "echo node >/etc/hostname",
        write_file(POLICY_PATH, POLICY, "644"),
        write_file("/usr/local/sbin/rnt-rxe", RXE_SCRIPT, "755"),
        write_file("/etc/systemd/system/rnt-rxe.service", RXE_UNIT, "644"),
        "systemctl enable --quiet rnt-rxe.service",
    ]
    for path, body in FILES[stack]().items():
        mode = "600" if path.startswith(("/etc/netplan/", "/etc/NetworkManager/")) else "644"
        lines.append(write_file(path, body, mode))
    lines.append("systemctl enable --quiet " + " ".join(UNITS[stack]))
    node.ok("\n".join(lines), 300)


def config_files(node: Guest) -> dict[str, str]:
    """Every file under CONFIG_DIRS with its sha256 (what `persist --remove`
    must leave as the admin had it)."""
    out = node.ok(
        "for d in " + " ".join(CONFIG_DIRS) + "; do [ -d $d ] && find $d -type f -exec sha256sum {} +; done; true"
    )
    files = {}
    for line in out.splitlines():
        digest, _, path = line.partition("  ")
        files[path] = digest
    return files


def routing_state(node: Guest) -> dict[str, object]:
    """What roce-net changes and a reboot resets: rules and unicast routes of
    both families in every table, the ARP, rp_filter and policy's IPv6
    sysctls; compares with == (duplicates kept)."""
    # Each tagged with its family: `ip -j` does not say it, and the two
    # families' default rules look alike.
    rules, routes = [], []
    for fam in ("-4", "-6"):
        rules += [{**r, "family": fam} for r in json.loads(node.ok(f"ip -j {fam} rule show") or "[]")]
        routes += [
            {**r, "family": fam}
            for r in json.loads(node.ok(f"ip -j {fam} route show table all") or "[]")
            if r.get("type", "unicast") == "unicast"
        ]
    keys = []
    for scope in ("all", "default", "eth0", "eth1", "eth2"):
        for k in ("arp_ignore", "arp_announce", "rp_filter"):
            keys.append(f"net.ipv4.conf.{scope}.{k}")
    for dev, _ip in RDMA6:
        keys += [f"net.ipv6.conf.{dev}.{k}" for k in IPV6_SYSCTLS]
    sysctls = node.ok("sysctl " + " ".join(keys)).strip().splitlines()
    # Sorted: two NICs configured at boot come up in either order.
    def order(xs: list) -> list:
        return sorted(xs, key=lambda x: json.dumps(x, sort_keys=True))

    return {"rules": order(rules), "routes": order(routes), "sysctls": sysctls}


def without_metrics(state: dict[str, object]) -> dict[str, object]:
    """STATE with the routes' metrics left out (sorted again)."""
    routes = state["routes"]
    assert isinstance(routes, list)
    bare = [{k: v for k, v in r.items() if k != "metric"} for r in routes]
    return {**state, "routes": sorted(bare, key=lambda x: json.dumps(x, sort_keys=True))}


def duplicates(state: dict[str, object]) -> list[str]:
    """Rules or routes present twice (the same line twice in `ip -j` output)."""
    seen: dict[str, int] = {}
    for kind in ("rules", "routes"):
        items = state[kind]
        assert isinstance(items, list)
        for x in items:
            key = kind + " " + json.dumps(x, sort_keys=True)
            seen[key] = seen.get(key, 0) + 1
    return [k for k, n in seen.items() if n > 1]


def make(bed: Bed) -> tuple[Guest, Guest]:
    bed.bridge("mgmt0", HARNESS_MGMT)
    node = bed.guest("node", NODE_MACS, memory_mb=768, bridges=["br0", "br0", "mgmt0"])
    peer = bed.guest("peer", PEER_MACS, bridges=["br0", "mgmt0"])
    return node, peer


def peer_setup(peer: Guest) -> None:
    """The peer is configured at run time (it never reboots): its RDMA NIC
    and its management NIC."""
    peer.ok(
        "set -e; hostname peer; modprobe rdma_rxe; ip link set eth0 up; ip link set eth1 up;"
        f" ip addr replace {PEER_IP}/24 dev eth0; ip addr replace {PEER_MGMT}/24 dev eth1;"
        f" ip -6 addr replace {PEER_IP6}/{PREFIX6} dev eth0;"
        " rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev eth0"
    )


def addresses(node: Guest, family: str = "-4") -> dict[str, list[str]]:
    """The addresses of FAMILY (`-4`, `-6`) on each NIC."""
    out: dict[str, list[str]] = {}
    for link in json.loads(node.ok(f"ip -j {family} addr show") or "[]"):
        out[link["ifname"]] = [a["local"] for a in link.get("addr_info", [])]
    return out


def wait_addresses(node: Guest, want: list[tuple[str, str]], family: str = "-4", secs: float = 180) -> dict[str, list[str]]:
    """The addresses of FAMILY once every (NIC, address) of WANT is there, or
    at SECS: a stack brings its configuration up after the boot's units are
    active (NetworkManager activates its profiles on its own time), and a
    busy TCG guest can take a minute for it. The caller asserts on what it
    gets back."""
    deadline = time.monotonic() + secs
    while True:
        got = addresses(node, family)
        if all(ip in got.get(dev, []) for dev, ip in want) or time.monotonic() > deadline:
            return got
        time.sleep(2)


def findings(node: Guest, policy: Optional[str] = None) -> list[dict]:
    """The doctor's findings on the node (ids, severities, messages)."""
    cmd = "/mnt/roce-net/bin/roce-net --json doctor" + (f" -f {policy}" if policy else "")
    r = node.sh(cmd, 240)
    doc = json.loads(r.out)
    return list(doc.get("findings", []))


NM_FIELDS = "connection.id,connection.interface-name,ipv4.method,ipv4.addresses,ipv4.gateway,ipv4.routes,ipv4.routing-rules,ipv6.method,ipv6.addresses,ipv6.routes,ipv6.routing-rules"


def nm_profiles(node: Guest) -> dict[str, str]:
    """The admin's NetworkManager profiles as the daemon reads them (what
    matters in them for routing): nmcli rewrites keyfiles it changes, so these
    are compared instead of the files' bytes."""
    out = {}
    for i, (dev, _ip) in enumerate(NICS):
        uuid = f"5f0c3a2e-0000-4000-8000-00000000000{i}"
        out[dev] = node.ok(f"nmcli -g {NM_FIELDS} connection show {uuid}")
    return out
