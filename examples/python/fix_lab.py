"""The seed scenario from Python: a broken 4-NIC host in throwaway namespaces,
diagnosed, planned, fixed as a transaction and checked from the wire.

Run as root, with the wheel installed (docs/python.md), e.g. into a venv:

    scripts/build-artifacts.sh wheel
    python3 -m venv .venv && .venv/bin/pip install dist/roce_net-*.whl
    # then, as root (with `sudo` in front if that is how you become root):
    .venv/bin/python examples/python/fix_lab.py

Everything happens in namespaces named rnt-py-* that the Lab removes on exit;
/etc and /run are not written (table names and the journal go to temp dirs).
"""

import tempfile

import roce_net


def main() -> None:
    with roce_net.Lab.seed(nics=4) as lab, tempfile.TemporaryDirectory() as tmp:
        host = roce_net.Host(netns=lab.host_ns, etc_root=tmp)
        peer = lab.peer()
        target = lab.nics[1].address

        before = host.snapshot()
        print("before:", sorted({f.id for f in roce_net.doctor(before)}))
        print("  ARP for", target, "answered by", len(peer.probe_arp("p0", target).replies), "MACs")

        plan = roce_net.plan(before, roce_net.Policy())
        print(plan.render_diff())
        report = host.apply(plan, state_dir=tmp)
        print("applied", report.applied, "changes")

        after = host.snapshot()
        print("after:", sorted({f.id for f in roce_net.doctor(after)}))
        print("  ARP for", target, "answered by", len(peer.probe_arp("p0", target).replies), "MAC")
        for nic in lab.nics:
            d = host.route_get(lab.peer_nic.address, nic.address)
            print(f"  from {nic.address} leaves by {d.dev} (table {d.table})")
        print("second plan empty:", roce_net.plan(after, roce_net.Policy()).is_empty())
        print("NCCL:", roce_net.nccl_env(after).env())


if __name__ == "__main__":
    main()
