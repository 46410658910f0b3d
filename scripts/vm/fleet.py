"""A fleet of three nodes of three Debian generations, managed with Ansible
over real SSH (tests/vm/test_ansible_ssh.py, docs/vm.md, docs/ansible.md).

Each node has two RDMA NICs on one subnet (eth0, eth1, Soft-RoCE rxe0, rxe1)
and a management NIC (eth2) on a bridge of its own, where the controller (the
harness, in the bed's namespace) reaches it over SSH as root with the bed's
key and the node's pinned host key. The admin's configuration (systemd-networkd
files and a unit that adds the rxe devices) is in effect now and at every boot,
as Debian leaves such a node: ARP flux, no source routing. Nothing of roce-net
is on the nodes: the Ansible install role puts the wheel into a venv with each
node's own Python (3.9, 3.11, 3.13).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from stacks import RXE_SCRIPT, RXE_UNIT, write_file
from vmbed import REPO, Bed, Guest


@dataclass(frozen=True)
class Node:
    """One node of the fleet: its guest name, release and addresses."""

    name: str
    release: str
    rdma: tuple[str, str]  # eth0's and eth1's address
    mgmt: str  # eth2's address, where SSH reaches it

    @property
    def index(self) -> int:
        return int(self.name[-1])

    @property
    def macs(self) -> list[str]:
        k = self.index
        return [f"52:54:00:12:04:{k}1", f"52:54:00:12:04:{k}2", f"52:54:00:13:04:{k}1"]


NODES = [
    Node("node1", "bullseye", ("198.18.4.11", "198.18.4.12"), "198.19.4.11"),
    Node("node2", "bookworm", ("198.18.4.21", "198.18.4.22"), "198.19.4.21"),
    Node("node3", "trixie", ("198.18.4.31", "198.18.4.32"), "198.19.4.31"),
]
PREFIX = 24
HARNESS_MGMT = "198.19.4.1/24"
EXAMPLES = REPO / "examples" / "ansible"
# The nodes of the RDMA matrix, the last one the probe server. Not node1:
# Debian 11's kernel 5.10 oopsed in its rxe driver while serving the probe
# (NULL pointer dereference in a workqueue, process_one_work; docs/vm.md).
RDMA_HOSTS = ["node2", "node3"]


def make(bed: Bed, nodes: Sequence[Node] = NODES) -> list[Guest]:
    """The nodes (default the three of NODES) on BED (booted by `bed.boot()`)."""
    bed.bridge("mgmt0", HARNESS_MGMT)
    return [
        bed.guest(n.name, n.macs, memory_mb=768, bridges=["br0", "br0", "mgmt0"], release=n.release)
        for n in nodes
    ]


def _networkd(n: Node) -> dict[str, str]:
    nics = [("eth0", n.rdma[0]), ("eth1", n.rdma[1]), ("eth2", n.mgmt)]
    return {
        f"/etc/systemd/network/10-{dev}.network": f"[Match]\nName={dev}\n\n[Network]\nAddress={ip}/{PREFIX}\n"
        for dev, ip in nics
    }


def configure(g: Guest, n: Node) -> None:
    """The admin's configuration of node N, in effect now and at every boot,
    and the harness's key in root's authorized_keys (host key pinned)."""
    lines = [
        "set -e",
        f"echo {n.name} >/etc/hostname",
        f"hostname {n.name}",
        write_file("/usr/local/sbin/rnt-rxe", RXE_SCRIPT, "755"),
        write_file("/etc/systemd/system/rnt-rxe.service", RXE_UNIT, "644"),
    ]
    for path, body in _networkd(n).items():
        lines.append(write_file(path, body, "644"))
    lines += [
        "systemctl daemon-reload",
        "systemctl enable --quiet systemd-networkd.service rnt-rxe.service",
        "systemctl restart systemd-networkd.service",
        "systemctl start rnt-rxe.service",
    ]
    g.ok("\n".join(lines), 180)
    g.ssh_setup(n.mgmt)


#: What a node's Python may lack and the install role must not need: the
#: packages the image carries for the other tests' pip (python3-pip pulls in
#: setuptools, pkg_resources and wheel; ansible.builtin.pip needed
#: pkg_resources or packaging in the node's system Python).
NOT_ON_A_MINIMAL_NODE = ("python3-pip", "python3-setuptools", "python3-pkg-resources", "python3-wheel", "python3-packaging")
#: The Python modules they bring, none of which the node's python3 may import then.
MINIMAL_NODE_LACKS = ("pip", "setuptools", "pkg_resources", "wheel", "packaging")


def make_minimal(g: Guest) -> str:
    """G's Python as minimal as the docs ask of a Debian node: python3 and
    python3-venv (with what python3-venv depends on), nothing of pip, removed
    with dpkg (offline). Returns the python3 packages left, for the log; fails
    when one of the modules is still importable or python3-venv went with them."""
    # Packages that are not there are only warned about (exit 0).
    g.ok("dpkg --purge " + " ".join(NOT_ON_A_MINIMAL_NODE), 600)
    for mod in MINIMAL_NODE_LACKS:
        r = g.sh(f"python3 -c 'import {mod}'")
        if r.ok:
            raise AssertionError(f"{g.name}: python3 still imports {mod} after removing {NOT_ON_A_MINIMAL_NODE}")
    g.ok("dpkg-query -W -f '${Status}\\n' python3-venv | grep -qx 'install ok installed'")
    return g.ok("dpkg -l 'python3*' 'python-*-whl' 2>/dev/null | awk '/^ii/ {print $2}' | tr '\\n' ' '")


def teach_flux(guests: Sequence[Guest]) -> None:
    """Traffic between the nodes, as a cluster's first job would make: every
    node pings every other node's RDMA addresses, and each answers ARP for both
    of its addresses on both NICs (Debian's defaults), so peers learn some
    addresses with the wrong NIC's MAC."""
    for g in guests:
        others = [ip for n in NODES if n.name != g.name for ip in n.rdma]
        g.sh("for ip in " + " ".join(others) + "; do ping -n -q -c 1 -W 1 $ip >/dev/null 2>&1; done; true", 120)


#: Where the install role puts roce_net on a node (its venv's Python).
VENV_PYTHON = "/opt/roce-net/bin/python"


def inventory(
    bed: Bed, path: Path, python: str, node_python: str = "/usr/bin/python3", nodes: Sequence[Node] = NODES
) -> Path:
    """The Ansible inventory of the fleet: SSH to root@mgmt with the bed's key
    and pinned host keys, nothing of the machine's own SSH configuration; the
    controller (localhost) runs PYTHON, which has roce_net. The nodes run
    NODE_PYTHON: their own, or, once the install role ran, its venv's
    (VENV_PYTHON), as docs/ansible.md says to set it in the inventory."""
    key = bed.ssh_key()
    known = key.parent / "known_hosts"
    ssh_args = f"-F /dev/null -o UserKnownHostsFile={known} -o StrictHostKeyChecking=yes -o ConnectTimeout=20"
    lines = ["[fleet]"]
    for n in nodes:
        lines.append(f"{n.name} ansible_host={n.mgmt} rdma_address={n.rdma[1]}")
    lines += ["", "[rdma]", *RDMA_HOSTS]
    lines += [
        "",
        "[fleet:vars]",
        "ansible_user=root",
        f"ansible_ssh_private_key_file={key}",
        f"ansible_ssh_common_args='{ssh_args}'",
        f"ansible_python_interpreter={node_python}",
        "",
        "[controller]",
        f"localhost ansible_connection=local ansible_python_interpreter={python} ansible_remote_tmp={path.parent / 'controller-tmp'}",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass
class Play:
    """One ansible-playbook run: its exit code, output and per-host recap."""

    rc: int
    out: str
    recap: dict[str, dict[str, int]]
    seconds: float

    def fatal(self) -> str:
        lines = [x for x in self.out.splitlines() if x.startswith(("fatal:", "failed:"))]
        return "\n".join(x[:2000] for x in lines) + "\n" + self.out[-3000:]


def play(bed: Bed, inv: Path, playbook: str, tmp: Path, *extra: str, timeout: float = 1800) -> Play:
    """ansible-playbook PLAYBOOK (examples/ansible) with the controller in the
    bed's namespace, where the nodes' management addresses are."""
    bindir = Path(os.environ.get("ROCE_NET_ANSIBLE_BIN", "") or _venv_bin())
    cp = bed.tmp / "ansible-cp"
    cp.mkdir(exist_ok=True)
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(EXAMPLES / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(REPO),
        ANSIBLE_HOME=str(tmp / "ansible-home"),
        ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"),
        ANSIBLE_HOST_KEY_CHECKING="True",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORKS=str(len(NODES)),
        ANSIBLE_TIMEOUT="60",
        # SSH connection sharing in the bed's directory, and short-lived: the
        # masters are ended below, not left in the machine's ~/.ansible/cp.
        ANSIBLE_SSH_CONTROL_PATH_DIR=str(cp),
        ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=30s",
    )
    t0 = time.monotonic()
    # Its own process group: the playbook's forks end with it, whatever ends the run.
    proc = subprocess.Popen(
        ["ip", "netns", "exec", bed.ns, str(bindir / "ansible-playbook"), "-i", str(inv), str(EXAMPLES / playbook), *extra],
        cwd=EXAMPLES, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        _end_ssh_masters(cp)
    recap = {
        m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
        for m in re.finditer(r"^(node\d)\s*:\s*(ok=.*)$", stdout, re.M)
    }
    return Play(proc.returncode, stdout + stderr, recap, time.monotonic() - t0)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        pass


def _end_ssh_masters(cp: Path) -> None:
    """End the SSH connection masters of this bed's plays: the processes whose
    command line names its control directory (no other process does)."""
    mark = str(cp).encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes()[: 1 << 16]
        except OSError:
            continue
        if mark in argv and argv.startswith(b"ssh"):
            try:
                os.kill(int(d.name), signal.SIGTERM)
            except ProcessLookupError:
                pass


def _venv_bin() -> Path:
    """Where this Python's ansible-playbook is (the test venv has ansible-core)."""
    return Path(sys.executable).parent


def routing(g: Guest) -> dict[str, object]:
    """The node's rules, routes in every table and ARP sysctls (check mode must leave them)."""
    rules = json.loads(g.ok("ip -j rule show") or "[]")
    routes = json.loads(g.ok("ip -j route show table all") or "[]")
    sysctls = g.ok("sysctl net.ipv4.conf.all.arp_ignore net.ipv4.conf.all.arp_announce net.ipv4.conf.all.rp_filter")
    key = lambda x: json.dumps(x, sort_keys=True)  # noqa: E731
    return {"rules": sorted(rules, key=key), "routes": sorted(routes, key=key), "sysctls": sysctls}


def result(path: Path) -> Optional[dict]:
    """A JSON result a playbook saved on the controller, if it did."""
    return json.loads(path.read_text()) if path.exists() else None


#: The mesh on emulated NICs under TCG (mesh.yml's variables): every pair of
#: each rail once (three NICs a rail: one round); no RDMA probes within a node
#: (Soft-RoCE does not carry RDMA between two of its devices on one host: the
#: kernel routes a local address by lo, and the probe failed with
#: `no-route-or-arp`, docs/vm.md); bounds with room for a guest the host starves
#: (an IP echo took 250 ms); and a start that covers launching the run over SSH
#: (78 to 128 s after the plan, measured with the machine busy).
MESH = ["-e", "mesh_all_pairs=true", "-e", "mesh_intra_host=false", "-e", "mesh_start_in=180",
        "-e", "mesh_neighbor_ms=3000", "-e", "mesh_ip_ms=3000", "-e", "mesh_rdma_ms=20000"]


def rdma_levels(results: Sequence[Path]) -> dict[tuple[str, str], str]:
    """Every RDMA level of the nodes' mesh results (`mesh run -o`, mesh.yml's
    mesh-result-NODE.json): (prober NIC, target NIC) as `host nic` to its status."""
    levels = {}
    for f in results:
        r = json.loads(f.read_text())
        for pr in r["probes"]:
            for lv in pr["levels"]:
                if lv["level"] == "rdma":
                    levels[(f"{r['host']} {pr['from']}", f"{pr['to_host']} {pr['to']}")] = lv["status"]
    return levels


def faults(report: dict) -> list[tuple[str, str, str, str]]:
    """A mesh report's faults as (element, host, nic, cause)."""
    return [(f["element"], f.get("host"), f.get("nic"), f["cause"]) for f in report["faults"]]
