"""The VM demo (scripts/vm-lab.sh): the seed on real RDMA, before and after.

Boots a node with four NICs and a peer with one (Soft-RoCE on every NIC),
shows ping working and RDMA failing from the peer to three of the node's four
NICs, the doctor's findings on the node and `roce-net probe rdma`'s
explanation, applies the fix on the node alone, and shows every pair passing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import seed  # noqa: E402
import vmbed  # noqa: E402


def say(title: str) -> None:
    print(f"\n=== {title}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--keep", action="store_true", help="leave the guests running and say how to reach and remove them")
    ap.add_argument("--remove", metavar="DIR", help="stop and remove a kept demo (the directory --keep printed)")
    a = ap.parse_args()
    if a.remove:
        vmbed.remove(Path(a.remove))
        print(f"removed the kept demo in {a.remove}")
        return 0
    mt = vmbed.REPO / "tests/fixtures/mlnx-tools"
    bed = vmbed.Bed(share_files={
        "bin/roce-net": vmbed.roce_net_binary(),
        "mlnx-tools/show_gids": mt / "show_gids-8fbfd9c",
        "mlnx-tools/ibdev2netdev": mt / "ibdev2netdev-c3aad38",
    })
    bed.keep = a.keep
    t0 = time.monotonic()
    with bed:
        node, peer = seed.make(bed)
        say(f"booting two Debian 12 guests ({bed.accel}: {bed.accel_why})")
        bed.boot()
        seed.nic_setup(node, seed.NODE_IPS)
        seed.nic_setup(peer, [seed.PEER_IP])
        seed.wait_active(node, 4)
        seed.wait_active(peer, 1)
        print(node.ok("rdma link show"))
        seed.make_broken(node, peer)
        say("before: the node as Debian leaves it; the peer's ARP cache for the node's addresses")
        for ip, mac in seed.neigh_macs(peer).items():
            k = seed.NODE_IPS.index(ip) if ip in seed.NODE_IPS else -1
            right = k >= 0 and mac == seed.NODE_MACS[k]
            print(f"  {ip} -> {mac}  {'(its own NIC)' if right else f'(WRONG: eth{k} has {seed.NODE_MACS[k]})' if k >= 0 else ''}")
        tools = ("ping", "probe", "ib_write_bw")
        gn, gp = seed.gid_index(node), seed.gid_index(peer)
        cases = seed.matrix(node, peer, gn, gp, tools=tools)
        print(seed.table(cases))
        for c in cases:
            if c.tool == "roce-net probe rdma" and not c.ok and c.client is not None:
                try:
                    msg = json.loads(c.client.out)["failure"]["message"]
                except (ValueError, KeyError, TypeError):
                    msg = c.text
                say(f"roce-net probe rdma from the peer to {seed.NODE_IPS[c.nic]} explains itself")
                print("  " + msg)
                break
        say("roce-net doctor on the node")
        print(node.sh(f"{seed.RN} doctor", 300).text())
        say("roce-net apply --yes on the node (nothing is done on the peer)")
        print(node.sh(f"{seed.RN} apply --yes", 300).text())
        say("after: the same matrix")
        cases = seed.matrix(node, peer, gn, gp, tools=tools)
        print(seed.table(cases))
        bad = [c for c in cases if not c.ok]
        say(f"{len(cases) - len(bad)} of {len(cases)} passed after the fix; {time.monotonic() - t0:.0f} s in all")
        if bed.keep:
            bed.save()
            print(f"guests kept; drive them with python3 -c 'import sys; sys.path.insert(0, \"scripts/vm\"); import vmbed; g = vmbed.attach(__import__(\"pathlib\").Path(\"{bed.tmp}\")); print(g[\"node\"].ok(\"rdma link\"))'")
            print(f"remove them with: scripts/vm-lab.sh --remove {bed.tmp}")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
