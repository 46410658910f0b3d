"""roce-net's views against the real tools on real sysfs: the rxe devices of
the VM tier's node (docs/vm.md). Runs on the guests test_seed_rdma.py booted."""

from __future__ import annotations

import ipaddress
import json
import re

import seed
from seed import NODE_IPS, RN

MT = "/mnt/roce-net/mlnx-tools"


def test_gids_equal_mlnx_tools_show_gids_on_real_sysfs(seed_bed):
    _bed, node, _peer = seed_bed
    ours = node.ok(f"{RN} gids")
    print(ours)
    assert ours.count("\tv2\t") == 2 * len(NODE_IPS) and "198.18.0.12" in ours
    # show_gids forks `cat` for each of a port's slots and an rxe port has
    # 1024 (about two minutes per device under TCG); `--slim` stops after the
    # empty slots, which prints the same rows. Byte for byte (adaec78).
    real = node.ok(f"LC_ALL=C bash {MT}/show_gids-adaec78 --slim", timeout=900)
    assert ours == real, f"roce-net gids:\n{ours}\nshow_gids (adaec78):\n{real}"
    one = node.ok(f"LC_ALL=C bash {MT}/show_gids-adaec78 --slim --dev=rxe2", timeout=900)
    assert node.ok(f"{RN} gids rxe2") == one


def test_ibdev2netdev_where_the_real_script_sees_nothing(seed_bed):
    _bed, node, _peer = seed_bed
    ours = node.ok(f"{RN} ibdev2netdev")
    real = node.sh(f"LC_ALL=C bash {MT}/ibdev2netdev")
    print(ours)
    want = "".join(f"rxe{k} port 1 ==> eth{k} (Up)\n" for k in range(len(NODE_IPS)))
    assert ours == want
    # OFED's ibdev2netdev finds a port's netdev through the device's PCI
    # function (/sys/class/infiniband/DEV/device/net): a software device has
    # none, so the script prints nothing for rxe, where `rdma link` and the
    # GID table's ndevs name eth0-eth3 (docs/vm.md). roce-net reads the port's
    # netdev as the kernel records it.
    assert real.out == "", real.text()
    links = {x["ifname"]: x["netdev"] for x in json.loads(node.ok("rdma -j link show"))}
    assert links == {f"rxe{k}": f"eth{k}" for k in range(len(NODE_IPS))}


def _norm(state: str) -> str:
    """ACTIVE / LINK_UP / LinkUp / PORT_ACTIVE: one spelling."""
    return state.upper().replace("_", "").replace("PORT", "")


def test_verbs_view_against_ibv_devinfo_and_rdma_link(seed_bed):
    _bed, node, _peer = seed_bed
    v = json.loads(node.ok(f"{RN} --json verbs"))
    links = json.loads(node.ok("rdma -j link show"))
    print(json.dumps(v)[:2000])
    devinfo = node.ok("ibv_devinfo -v")
    devices = v["devices"] if isinstance(v, dict) else v
    by_name = {d["name"]: d for d in devices}
    for link in links:
        dev = by_name[link["ifname"]]
        port = next(p for p in dev["ports"] if p["port"] == link["port"])
        assert _norm(port["state"]) == _norm(link["state"]), (port, link)
        assert _norm(port["phys_state"]) == _norm(link["physical_state"]), (port, link)
        assert port.get("netdev") in (None, link["netdev"]), (port, link)
    for d in devices:
        block = devinfo.split(f"hca_id:\t{d['name']}")[1].split("hca_id:")[0]
        for p in d["ports"]:
            state = re.search(r"\bstate:\s+(\w+)", block)
            phys = re.search(r"phys_state:\s+(\w+)", block)
            mtu = re.search(r"active_mtu:\s+(\d+)", block)
            assert state and _norm(state.group(1)) == _norm(p["state"]), (d["name"], p["state"], block[:400])
            assert phys and _norm(phys.group(1)) == _norm(p["phys_state"]), (d["name"], p["phys_state"])
            assert mtu and int(mtu.group(1)) == p["active_mtu"], (d["name"], p["active_mtu"])
            real = {
                (int(i), ipaddress.ip_address(g))
                for i, g in re.findall(r"GID\[\s*(\d+)\]:\s+([0-9a-f:.]+)", block)
            }
            ours = {(g["index"], ipaddress.ip_address(g["gid"])) for g in p.get("gids", [])}
            assert ours == real, (d["name"], sorted(ours), sorted(real))


def test_nccl_env_picks_the_rocev2_ipv4_entry_of_the_real_gid_table(seed_bed):
    _bed, node, _peer = seed_bed
    env = seed.nccl_env(node)
    picks = {p["port"]["device"]: p for p in env["picks"]}
    for k, ip in enumerate(NODE_IPS):
        dev = f"rxe{k}"
        want = None
        for i in range(0, 16):
            r = node.sh(f"cat /sys/class/infiniband/{dev}/ports/1/gids/{i} /sys/class/infiniband/{dev}/ports/1/gid_attrs/types/{i}")
            if not r.ok:
                continue
            gid, typ = r.out.splitlines()[:2]
            h = [int(x, 16) for x in gid.split(":")]
            if typ == "RoCE v2" and h[:5] == [0, 0, 0, 0, 0] and h[5] == 0xFFFF:
                v4 = f"{h[6] >> 8}.{h[6] & 255}.{h[7] >> 8}.{h[7] & 255}"
                if v4 == ip:
                    want = i
                    break
        assert want is not None, f"{dev}: no RoCE v2 GID for {ip} in sysfs"
        assert picks[dev]["target"]["index"] == want, picks[dev]
    hca = next(v["value"] for v in env["vars"] if v["name"] == "NCCL_IB_HCA")
    assert hca == "=" + ",".join(f"rxe{k}:1" for k in range(len(NODE_IPS)))
