"""The VM demo (scripts/vm-lab.sh): the seed on real RDMA, before and after.

Boots a node with four NICs and a peer with one (Soft-RoCE on every NIC),
shows ping working and RDMA failing from the peer to three of the node's four
NICs, the doctor's findings on the node and `roce-net probe rdma`'s
explanation, applies the fix on the node alone, and shows every pair passing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import seed  # noqa: E402
import vmbed  # noqa: E402


def say(title: str) -> None:
    print(f"\n=== {title}", flush=True)


def progress(line: str) -> None:
    print(line, flush=True)


#: Who is who, said once before the first matrix.
WHO = (
    "the node is the GPU server with four RDMA NICs (eth0-eth3, 198.18.0.11-14, one subnet, Soft-RoCE "
    "rxe0-rxe3); the peer is another server with one (eth0, 198.18.0.21). Each test runs between the "
    "peer and one of the node's NICs, in both directions."
)

#: Why one direction fails and the other passes, said after the "before" matrix.
WHY_DIRECTIONS = (
    "why peer->node fails and node->peer passes: the node answers ARP for each of its addresses from "
    "every NIC (ARP flux), so the peer learned some of the node's addresses with another NIC's MAC. "
    "RDMA from the peer then goes to the wrong NIC, whose RoCE device drops a packet for a GID that is "
    "not its own (ping and TCP do not care which NIC takes them). Traffic the node starts makes the "
    "node ask ARP for the peer first, and the peer takes the node's address and MAC from that request, "
    "which usually corrects its entry: that direction usually passes."
)


def in_demo_words(msg: str) -> str:
    """`roce-net probe rdma`'s explanation in this demo's words. The probe ran
    on the peer: what it calls "this host" (or "this end") is the peer, and what
    it calls "the peer" is the other end, the node."""
    mark = "\0node\0"
    msg = re.sub(r"\b[Tt]he peer\b", mark, msg)
    msg = re.sub(r"\b[Tt]his host\b", "the peer", msg)
    msg = re.sub(r"\b[Tt]his end\b", "the peer's end", msg)
    return msg.replace(mark, "the node")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--keep", action="store_true", help="leave the guests running and say how to reach and remove them")
    ap.add_argument("--remove", metavar="DIR", help="stop and remove a kept demo (the directory --keep printed)")
    a = ap.parse_args()
    if a.remove:
        try:
            vmbed.remove(Path(a.remove))
        except (OSError, ValueError, vmbed.VmError) as e:
            print(f"scripts/vm-lab.sh --remove {a.remove}: {e}", file=sys.stderr)
            return 1
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
        say("before: ping, roce-net probe rdma and ib_write_bw in both directions (a few minutes under emulation)")
        print(WHO)
        for d, what in seed.DIRECTIONS.items():
            print(f"  {d}: {what}")
        cases = seed.matrix(node, peer, gn, gp, tools=tools, progress=progress)
        print(seed.table(cases, in_demo_words))
        bad = [c for c in cases if not c.ok]
        say(f"before: {len(cases) - len(bad)} of {len(cases)} passed ({seed.counts(cases)})")
        print(WHY_DIRECTIONS)
        for c in cases:
            if c.tool == "roce-net probe rdma" and not c.ok and c.client is not None:
                try:
                    msg = json.loads(c.client.out)["failure"]["message"]
                except (ValueError, KeyError, TypeError):
                    msg = c.text
                say(
                    f"roce-net probe rdma, run on the peer toward the node's {seed.NODE_IPS[c.nic]} (eth{c.nic}), "
                    "explains the failure (the probe's words, with the peer and the node named as in this demo)"
                )
                print("  " + in_demo_words(msg))
                break
        say("roce-net doctor on the node")
        print(node.sh(f"{seed.RN} doctor", 300).text())
        say("roce-net apply --yes on the node (nothing is done on the peer)")
        print(node.sh(f"{seed.RN} apply --yes", 300).text())
        say("after: the same matrix")
        cases = seed.matrix(node, peer, gn, gp, tools=tools, progress=progress)
        print(seed.table(cases, in_demo_words))
        bad = [c for c in cases if not c.ok]
        say(f"after: {len(cases) - len(bad)} of {len(cases)} passed ({seed.counts(cases)}); {time.monotonic() - t0:.0f} s in all")
        if bed.keep:
            bed.save()
            print(f"guests kept; drive them with python3 -c 'import sys; sys.path.insert(0, \"scripts/vm\"); import vmbed; g = vmbed.attach(__import__(\"pathlib\").Path(\"{bed.tmp}\")); print(g[\"node\"].ok(\"rdma link\"))'")
            print(f"remove them with: scripts/vm-lab.sh --remove {bed.tmp}")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
