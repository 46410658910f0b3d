"""The VM demo's words (scripts/vm-lab.sh, scripts/vm/demo.py), for someone
who knows networking but not this tool, checked on what the probe engine
really says (its recorded ARP-flux report; tests/vm/test_seed_rdma.py checks
the same on the live guests' reports): who is the node and who the peer in
every sentence (the probe's explanation called the node "the peer", from the
probe's side), a failure's detail whole (the matrix cut it mid-sentence at 300
characters), a line while each tool runs and the counts of the "before"
matrix (92 s passed in silence), why one direction fails and not the other,
and a word from scripts/vm/install-deps.sh when all is installed. No guest
boots here.
"""

from __future__ import annotations

import json
import re
import subprocess

import demo
import seed
import vmbed
from conftest import REPO

ARP_FLUX = json.loads((REPO / "roce-net/tests/fixtures/rdma/rdma_probe_arp_flux.json").read_text())


def test_the_probes_explanation_names_the_node_and_the_peer_as_the_demo_does():
    msg = ARP_FLUX["failure"]["message"]
    assert "this host's neighbour entry for the peer's" in msg  # the probe's own side
    said = demo.in_demo_words(msg)
    assert "this host" not in said and "this end" not in said, said
    assert "the peer's neighbour entry for the node's 198.18.0.100" in said, said
    assert "the node answered ARP" in said and "arp_ignore=0 on the node" in said, said
    # Every other word is the probe's own.
    strip = lambda t: re.sub(r"\b(the (peer|node)|this host)\b", "", t)  # noqa: E731
    assert strip(said) == strip(msg)


def fake_case(text: str, ok: bool = False) -> seed.Case:
    return seed.Case("roce-net probe rdma", "peer->node", 1, ok, text)


def test_a_failures_detail_is_shown_whole_wrapped_not_cut():
    long = ARP_FLUX["failure"]["message"] + " " + "and the rest of the sentence goes on " * 8 + "END."
    assert len(long) > 300
    out = seed.table([fake_case(long)], demo.in_demo_words)
    words = " ".join(x.strip() for x in out.splitlines()[1:])
    assert words == demo.in_demo_words(long), out
    assert all(len(x) <= 110 for x in out.splitlines()), out
    assert out.splitlines()[0].startswith("  FAIL  roce-net probe rdma peer->node eth1")


class FakeGuest:
    """Answers ping with success: enough for the matrix's ping cells."""

    def __init__(self, name: str) -> None:
        self.name = name

    def sh(self, cmd: str, timeout: float = 0) -> vmbed.Result:
        return vmbed.Result(cmd, 0, "2 packets transmitted, 2 received", "")


def test_the_matrix_says_what_runs_and_the_counts_and_why_the_directions_differ():
    lines: list[str] = []
    cases = seed.matrix(FakeGuest("node"), FakeGuest("peer"), 1, 1, tools=("ping",), progress=lines.append)  # type: ignore[arg-type]
    assert lines == [
        "  peer->node: ping on the node's 4 NICs ...",
        lines[1],
        "  node->peer: ping on the node's 4 NICs ...",
        lines[3],
    ], lines
    assert re.fullmatch(r"  peer->node: ping: 4 of 4 passed \(\d+ s\)", lines[1]), lines
    cases[0].ok = False
    assert seed.counts(cases) == "peer->node: ping 3/4; node->peer: ping 4/4"
    for d in ("peer->node", "node->peer"):
        assert "the peer" in seed.DIRECTIONS[d] and "the node" in seed.DIRECTIONS[d]
    assert "node is the GPU server" in demo.WHO and "the peer is another server" in demo.WHO
    why = demo.WHY_DIRECTIONS
    assert why.startswith("why peer->node fails and node->peer passes:") and "ARP flux" in why


def test_install_deps_says_so_when_all_is_installed():
    r = subprocess.run([str(REPO / "scripts/vm/install-deps.sh")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip(), "install-deps.sh printed nothing"
