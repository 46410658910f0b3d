"""The CLI's read-only RDMA views from Python: show_gids / ibdev2netdev (and their
text), nccl_check and nccl_env's release, on the sysfs fixture trees the Rust
tests use (roce-net/tests/fixtures/sysfs, no RDMA hardware needed).

The rows are checked against a model that reads the tree itself, written from
mlnx-tools' show_gids (as tests/it/cli_views.rs does), and, as root, against the
real show_gids vendored in tests/fixtures/mlnx-tools."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest

import roce_net

REPO = Path(__file__).resolve().parents[2]
TREES = REPO / "roce-net" / "tests" / "fixtures" / "sysfs"
MLNX_TOOLS = REPO / "tests" / "fixtures" / "mlnx-tools"
# Every tree but `malformed` (which is for the reader's error paths), found in
# the directory as tests/it/cli_views.rs finds them, so the two cannot drift apart.
CASES = sorted(p.name for p in TREES.iterdir() if p.is_dir() and p.name != "malformed")
assert len(CASES) >= 13, f"fixture trees missing under {TREES}: {CASES}"


def snapshot(case: str) -> roce_net.HostState:
    """This namespace's snapshot with the RDMA devices of the fixture tree."""
    return roce_net.Host(sysfs_root=TREES / case).snapshot()


def snapshot_with(case: str, ifaces: Sequence[Tuple[str, bool, Optional[bool]]]) -> roce_net.HostState:
    """The tree's snapshot whose interfaces are exactly `ifaces` (name, admin up,
    carrier), so link states do not depend on this machine (as cli_views.rs)."""
    d = snapshot(case).to_dict()
    stats = {
        k: 0
        for k in (
            "rx_packets", "tx_packets", "rx_bytes", "tx_bytes",
            "rx_errors", "tx_errors", "rx_dropped", "tx_dropped",
        )
    }
    d["interfaces"] = [
        {
            "index": i + 2, "name": name, "kind": None, "mac": None, "mtu": 9000,
            "admin_up": up, "oper_state": "UP" if up and carrier else "DOWN",
            "carrier": carrier, "master": None, "stats": stats,
        }
        for i, (name, up, carrier) in enumerate(ifaces)
    ]
    d["addresses"] = []
    return roce_net.HostState.from_dict(d)


def snapshot_of_tree(case: str) -> roce_net.HostState:
    """The tree's snapshot with the netdevs and addresses its `netdevs.json`
    describes (all up) and nothing of this machine's routing (as cli_views.rs)."""
    d = snapshot(case).to_dict()
    nd = json.loads((TREES / case / "netdevs.json").read_text())
    d["interfaces"], d["addresses"] = [], []
    for n in nd["interfaces"]:
        d["interfaces"].append(
            {
                "index": n["index"], "name": n["name"], "kind": None, "mac": None,
                "mtu": n["mtu"], "admin_up": True, "oper_state": "UP", "carrier": True,
                "master": None, "stats": dict.fromkeys(
                    ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes",
                     "rx_errors", "tx_errors", "rx_dropped", "tx_dropped"), 0),
            }
        )
        for a in n["addresses"]:
            ip, plen = a.split("/")
            d["addresses"].append(
                {"ifname": n["name"], "ifindex": n["index"], "address": ip,
                 "prefix_len": int(plen), "scope": "global", "label": None}
            )
    d["routes"], d["rules"], d["neighbors"] = [], [], []
    return roce_net.HostState.from_dict(d)


def _cat(p: Path) -> Optional[str]:
    try:
        return p.read_text().strip()
    except OSError:
        return None


def _ls(p: Path, numeric: bool = False) -> List[str]:
    try:
        names = sorted(os.listdir(p))
    except OSError:
        return []
    if numeric:
        names.sort(key=lambda s: int(s) if s.isdigit() else 1 << 64)
    return names


def show_gids_model(root: Path, dev: Optional[str] = None, port: Optional[int] = None) -> List[Dict[str, Any]]:
    """show_gids (mlnx-tools sbin/show_gids, the `ls -v` revision adaec78) over
    the tree, as rows: the slots of each port in numeric order, devices in byte
    order, the all-zero and zero link-local GIDs skipped, IPv4 from the last 32
    bits when the first group is 0000, VER the type text from its first v/V."""
    ib = root / "class" / "infiniband"
    rows = []
    for d in [dev] if dev else _ls(ib):
        for p in _ls(ib / d / "ports", numeric=True):
            if port is not None and int(p) != port:
                continue
            pdir = ib / d / "ports" / p
            for g in _ls(pdir / "gids", numeric=True):
                gid = _cat(pdir / "gids" / g)
                if gid in (None, "0000:0000:0000:0000:0000:0000:0000:0000", "fe80:0000:0000:0000:0000:0000:0000:0000"):
                    continue
                ty = _cat(pdir / "gid_attrs" / "types" / g) or ""
                at = min((i for i in (ty.find("v"), ty.find("V")) if i >= 0), default=-1)
                ndev = _cat(pdir / "gid_attrs" / "ndevs" / g)
                groups = gid.split(":")
                ipv4 = None
                if groups[0] == "0000":
                    b = bytes.fromhex(groups[6] + groups[7])
                    ipv4 = ".".join(str(x) for x in b)
                rows.append(
                    {
                        "dev": d,
                        "port": int(p),
                        "index": int(g),
                        "gid": gid,
                        "ipv4": ipv4,
                        "ver": ty[at:] if at >= 0 else None,
                        "netdev": ndev or None,
                    }
                )
    return rows


def show_gids_text(rows: List[Dict[str, Any]]) -> str:
    """show_gids' text for the model's rows (its printf formats)."""
    out = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
    out += "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"
    for r in rows:
        ver, nd = r["ver"] or "", r["netdev"] or ""
        if r["ipv4"] is not None:
            out += f"{r['dev']}\t{r['port']}\t{r['index']}\t{r['gid']}\t{r['ipv4']}  \t{ver}\t{nd}\n"
        else:
            out += f"{r['dev']}\t{r['port']}\t{r['index']}\t{r['gid']}\t\t\t{ver}\t{nd}\n"
    return out + f"n_gids_found={len(rows)}\n"


@pytest.mark.parametrize("case", CASES)
def test_show_gids_rows_are_show_gids_on_every_tree(case):
    st = snapshot(case)
    rows = roce_net.show_gids(st)
    assert isinstance(rows, tuple) and all(isinstance(r, roce_net.GidRow) for r in rows)
    want = show_gids_model(TREES / case)
    assert want, f"{case}: the model found no GIDs"
    assert [r.to_dict() for r in rows] == want
    # The text is show_gids' own, from the rows or from their plain data.
    assert roce_net.render_show_gids(rows) == show_gids_text(want)
    assert roce_net.render_show_gids([r.to_dict() for r in rows]) == show_gids_text(want)
    # Rows round-trip through the library's JSON.
    assert tuple(roce_net.GidRow.from_json(r.to_json()) for r in rows) == rows


def test_show_gids_columns_on_connectx8():
    rows = roce_net.show_gids(snapshot("connectx8"))
    assert len(rows) == 32, "8 NICs x GIDs 0-3"
    v2 = [r for r in rows if r.ver == "v2" and r.ipv4 is not None]
    assert len(v2) == 8 and {r.index for r in v2} == {3}
    r = v2[0]
    assert (r.dev, r.port, r.netdev) == ("mlx5_0", 1, "ens1f0np0")
    assert r.gid.startswith("0000:0000:0000:0000:0000:ffff:")


def test_show_gids_on_an_ib_port_has_no_netdev_and_no_ipv4():
    rows = roce_net.show_gids(snapshot("ib-port"))
    assert rows and rows[0].netdev is None and rows[0].ipv4 is None
    assert rows[0].ver == "v1"


def test_show_gids_filters_and_their_errors():
    st = snapshot("port-down")
    root = TREES / "port-down"
    assert [r.to_dict() for r in roce_net.show_gids(st, "mlx4_0")] == show_gids_model(root, "mlx4_0")
    one = roce_net.show_gids(st, "mlx4_0", 1)
    assert one and {r.port for r in one} == {1}
    assert [r.to_dict() for r in one] == show_gids_model(root, "mlx4_0", 1)
    # The down port has no GIDs: no rows, and show_gids' empty listing.
    assert roce_net.show_gids(st, "mlx4_0", 2) == ()
    assert roce_net.render_show_gids(roce_net.show_gids(st, "mlx4_0", 2)).endswith("\nn_gids_found=0\n")
    with pytest.raises(roce_net.NotFoundError) as ei:
        roce_net.show_gids(st, "mlx5_9")
    assert ei.value.kind == "not_found"
    assert 'no RDMA device "mlx5_9" (devices: mlx4_0)' in str(ei.value), "lists the devices there are"
    with pytest.raises(roce_net.NotFoundError) as ei:
        roce_net.show_gids(st, "mlx4_0", 3)
    assert "has no port 3 (ports: 1, 2)" in str(ei.value)
    with pytest.raises(roce_net.InvalidInputError):
        roce_net.show_gids(st, port=1)


def test_render_show_gids_refuses_what_is_not_a_row():
    with pytest.raises(roce_net.InvalidInputError) as ei:
        roce_net.render_show_gids([{"dev": "mlx5_0"}])
    assert "row 0" in str(ei.value) and "GidRow" in str(ei.value)
    assert roce_net.render_show_gids([]).endswith("n_gids_found=0\n")


def test_ibdev2netdev_maps_every_port_to_its_own_netdev():
    # OFED's script maps mlx4 port 2 to enp5s0 (same PCI resource); dev_port says enp5s0d1.
    st = snapshot_with("port-down", [("enp5s0", True, True), ("enp5s0d1", False, None)])
    rows = roce_net.ibdev2netdev(st)
    assert all(isinstance(r, roce_net.Ibdev2NetdevRow) for r in rows)
    assert [(r.device, r.port, r.netdev, r.link_state) for r in rows] == [
        ("mlx4_0", 1, "enp5s0", "Up"),
        ("mlx4_0", 2, "enp5s0d1", "Down"),
    ]
    assert roce_net.render_ibdev2netdev(rows) == (
        "mlx4_0 port 1 ==> enp5s0 (Up)\nmlx4_0 port 2 ==> enp5s0d1 (Down)\n"
    )
    assert rows[1].part_number is None and rows[1].port_state == "DOWN"


def test_ibdev2netdev_verbose_on_connectx8():
    # Netdevs this namespace does not have: NA, as the script prints.
    rows = roce_net.ibdev2netdev(snapshot_with("connectx8", []))
    assert len(rows) == 8
    r = rows[0]
    assert (r.device, r.netdev, r.link_state) == ("mlx5_0", "ens1f0np0", "NA")
    assert (r.pci_addr, r.device_id, r.part_number, r.fw_ver, r.port_state) == (
        "0000:0c:00.0", "MT4129", "MCX75310AAS-NEAT", "28.39.1002", "ACTIVE",
    )
    text = roce_net.render_ibdev2netdev(rows, verbose=True)
    assert text.splitlines()[0] == (
        "0000:0c:00.0 mlx5_0 (MT4129 - MCX75310AAS-NEAT) NVIDIA ConnectX-7 HHHL adapter card, "
        "400GbE / NDR IB (default mode), Single-port OSFP, PCIe 5.0 x16 fw 28.39.1002 port 1 "
        "(ACTIVE) ==> ens1f0np0 (NA)"
    )
    assert len(text.splitlines()) == 8
    # No VPD, no device id: NA and the script's padding.
    rows = roce_net.ibdev2netdev(snapshot_with("rocep", [("enp65s0f0np0", True, False)]))
    assert roce_net.render_ibdev2netdev(rows, verbose=True) == (
        "0000:41:00.0 rocep65s0f0 (NA - NA)  fw 22.36.1010 port 1 (ACTIVE) ==> enp65s0f0np0 (Down)\n"
    )
    assert roce_net.render_ibdev2netdev(()) == ""
    with pytest.raises(roce_net.InvalidInputError):
        roce_net.render_ibdev2netdev([{"device": "mlx5_0"}])


def test_views_of_a_python_built_snapshot_agree():
    st = snapshot_with("connectx8", [("ens1f0np0", True, True)])
    built = roce_net.HostState.from_dict(st.to_dict())
    assert roce_net.show_gids(built) == roce_net.show_gids(st)
    assert roce_net.ibdev2netdev(built) == roce_net.ibdev2netdev(st)
    assert roce_net.ibdev2netdev(st)[0].link_state == "Up"


def test_nccl_check_reads_a_mapping_a_file_or_os_environ(tmp_path, monkeypatch):
    st = snapshot_of_tree("vlan-before")
    # No NCCL variables: NCCL 2.30 picks the VLAN's GID on two ports.
    for k in [k for k in os.environ if k.startswith("NCCL_")]:
        monkeypatch.delenv(k)
    findings = roce_net.nccl_check(st)
    assert all(isinstance(f, roce_net.Finding) for f in findings)
    wrong = [f for f in findings if f.id == "nccl-gid-pick-wrong"]
    assert wrong and wrong[0].subject.interface == "ens1f0np0"
    assert roce_net.nccl_check(st, {}) == findings
    # The advice, as a mapping and through os.environ: clean.
    advice = roce_net.nccl_env(st)
    assert "NCCL_IB_ADDR_RANGE" in advice.env()
    assert [f for f in roce_net.nccl_check(st, advice.env()) if f.severity != "info"] == []
    for k, v in advice.env().items():
        monkeypatch.setenv(k, v)
    assert roce_net.nccl_check(st) == roce_net.nccl_check(st, advice.env())
    # A file is parsed as NCCL parses nccl.conf: quotes stay in the value.
    conf = tmp_path / "nccl.conf"
    conf.write_text('NCCL_IB_HCA="=mlx5_0"\nNCCL_SOCKET_IFNAME==eth9\n')
    ids = {f.id for f in roce_net.nccl_check(st, env_file=conf)}
    assert {"nccl-value-misparsed", "nccl-hca-matches-nothing", "nccl-socket-ifname-matches-nothing"} <= ids
    ids = {f.id for f in roce_net.nccl_check(st, {"NCCL_IB_HCA": "=mlx5_99"})}
    assert "nccl-hca-matches-nothing" in ids


def test_nccl_check_bad_input(tmp_path):
    st = snapshot_of_tree("vlan-before")
    with pytest.raises(roce_net.InvalidInputError):
        roce_net.nccl_check(st, {}, env_file=tmp_path / "nccl.conf")
    with pytest.raises(roce_net.NotFoundError):
        roce_net.nccl_check(st, env_file=tmp_path / "missing.conf")
    with pytest.raises(roce_net.InvalidInputError) as ei:
        roce_net.nccl_check(st, env_file=tmp_path)  # a directory
    assert "NCCL environment file" in str(ei.value)
    big = tmp_path / "big.conf"
    big.write_bytes(b"#" * ((1 << 20) + 1))
    with pytest.raises(roce_net.InvalidInputError):
        roce_net.nccl_check(st, env_file=big)
    with pytest.raises(roce_net.InvalidInputError) as ei:
        roce_net.nccl_check(st, nccl_version="two")
    assert "two" in str(ei.value)
    # A value that is not a string names the variable and what to write.
    with pytest.raises(TypeError) as ei:
        roce_net.nccl_check(st, {"NCCL_IB_GID_INDEX": 3})
    assert "NCCL_IB_GID_INDEX" in str(ei.value) and "int" in str(ei.value), ei.value
    assert '"3"' in str(ei.value), ei.value
    with pytest.raises(TypeError) as ei:
        roce_net.nccl_check(st, {7: "x"})
    assert "keys are variable names" in str(ei.value), ei.value


def test_nccl_env_for_a_release():
    st = snapshot_of_tree("vlan-before")
    every = roce_net.nccl_env(st)
    assert every.get("NCCL_IB_ADDR_RANGE") is not None and every.env()["NCCL_IB_ADDR_RANGE"] == "198.18.0.0/24"
    # NCCL 2.20 only has the index: no range is recommended.
    old = roce_net.nccl_env(st, nccl_version="2.20")
    assert "NCCL_IB_ADDR_RANGE" not in old.env()
    assert roce_net.nccl_env(st, nccl_version="v2.30.7-1") != old
    with pytest.raises(roce_net.InvalidInputError):
        roce_net.nccl_env(st, nccl_version="two")
    # The release changes what the check assumes NCCL does.
    assert roce_net.nccl_check(st, {}, nccl_version="2.20") != roce_net.nccl_check(st, {})


def _real_show_gids(root: Path, *args: str) -> str:
    """mlnx-tools' own show_gids (adaec78, vendored unchanged) on a fixture tree,
    in a private mount namespace whose /sys/class is a tmpfs with one symlink to
    the tree (tests/it/cli_views.rs does the same): the machine's /sys is untouched."""
    r = subprocess.run(
        [
            "unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs rnt-show-gids /sys/class && '
            'ln -s "$1/class/infiniband" /sys/class/infiniband && shift && '
            'exec env LC_ALL=C bash "$@"',
            "sh", str(root), str(MLNX_TOOLS / "show_gids-adaec78"), *args,
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert r.returncode == 0, f"show_gids on {root}: {r.stderr}"
    return r.stdout


@pytest.mark.needs_root
@pytest.mark.parametrize("case", CASES)
def test_render_show_gids_equals_the_real_show_gids(case):
    root = TREES / case
    assert roce_net.render_show_gids(roce_net.show_gids(snapshot(case))) == _real_show_gids(root)
