# Copyright: (c) 2025, roce-net maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# or Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0.txt), at your option.
# SPDX-License-Identifier: GPL-3.0-or-later OR Apache-2.0
"""Unit tests of roce_net_fleet, roce_net_facts and roce_net_probe that need no
root: the fleet report over the repository's snapshot fixtures, the missing
library failure, argument errors."""

from __future__ import absolute_import, annotations, division, print_function

import copy
import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.roce_net.roce.plugins.module_utils import common
from ansible_collections.roce_net.roce.plugins.modules import roce_net_facts, roce_net_fleet, roce_net_probe

FIXTURES = os.path.join(
    os.path.dirname(__file__), *([os.pardir] * 7), "roce-net", "tests", "fixtures", "doctor"
)


def snapshot(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


def run(module, args, capsys):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(capsys.readouterr().out)


def two_hosts():
    """gpu1 (healthy.json) and a copy named gpu2 with its own addresses and MACs."""
    a = snapshot("healthy.json")
    b = copy.deepcopy(a)
    b["hostname"] = "gpu2"
    for i in b["interfaces"]:
        if i.get("mac"):
            i["mac"] = i["mac"][:-2] + "ee"
    for x in b["addresses"]:
        if x["scope"] == "global" and x["address"].startswith("198."):
            x["address"] = "198.18.0.%d" % (int(x["address"].rsplit(".", 1)[1]) + 100)
    b["rules"] = []
    b["routes"] = [r for r in b["routes"] if r.get("table") in (254, 255)]
    return a, b


def test_fleet_report_is_clean_for_matching_hosts_and_lists_their_nic_addresses(capsys):
    a, b = two_hosts()
    out = run(roce_net_fleet, dict(snapshots=[a, a]), capsys)
    assert out["changed"] is False
    assert [h["hostname"] for h in out["hosts"]] == ["gpu1", "gpu1"]
    # The same snapshot twice is one host given twice: named once, compared once, and
    # not a duplicate of its own addresses (whose fix would delete their only holder).
    assert out["summary"] == {"error": 0, "warning": 1, "info": 0}
    assert [f["id"] for f in out["findings"]] == ["fleet-host-repeated"]
    assert out["findings"][0]["evidence"]["snapshots"] == [1, 2]
    out = run(roce_net_fleet, dict(snapshots=[a, b]), capsys)
    assert out["findings"] == [] and out["summary"] == {"error": 0, "warning": 0, "info": 0}, out["findings"]
    assert [h["hostname"] for h in out["hosts"]] == ["gpu1", "gpu2"]
    addrs = out["nic_addresses"]
    assert addrs and all(x.startswith("198.18.0.") for x in addrs), addrs


def test_fleet_finds_a_peer_entry_with_the_wrong_mac_and_fail_on_fails(capsys):
    a, b = two_hosts()
    owner = [x for x in a["addresses"] if x["address"].startswith("198.18.0.")]
    first, second = owner[0], owner[1]
    mac_of = dict((i["name"], i["mac"]) for i in a["interfaces"])
    b["neighbors"] = [dict(ifname=first["ifname"], ifindex=3, ip=second["address"],
                           mac=mac_of[first["ifname"]], state=["REACHABLE"], router=False)]
    out = run(roce_net_fleet, dict(snapshots=[a, b]), capsys)
    wrong = [f for f in out["findings"] if f["id"] == "fleet-neighbor-wrong-mac"]
    assert len(wrong) == 1, out["findings"]
    assert wrong[0]["evidence"]["owner"]["interface"] == second["ifname"]
    assert wrong[0]["evidence"]["learned_mac_belongs_to"] == ["gpu1/" + first["ifname"]]
    out = run(roce_net_fleet, dict(snapshots=[a, b], fail_on="error"), capsys)
    assert out["failed"] is True and "fleet-neighbor-wrong-mac" in out["msg"], out


def test_fleet_rejects_a_document_that_is_no_snapshot(capsys):
    out = run(roce_net_fleet, dict(snapshots=[{"hostname": 3}]), capsys)
    assert out["failed"] is True and out["msg"], out


def test_modules_report_a_missing_roce_net(capsys, monkeypatch):
    monkeypatch.setattr(common, "roce_net", None)
    monkeypatch.setattr(common, "IMPORT_ERROR", "ImportError: hidden")
    out = run(roce_net_facts, dict(), capsys)
    assert out["failed"] is True and "Failed to import the required Python library (roce_net)" in out["msg"]


@pytest.mark.parametrize(
    "bad, says",
    [("fe80::1", "fe80::1 is IPv6 link-local"), ("198.18.0.256", "198.18.0.256"), ("r0", "'r0'")],
)
def test_probe_rejects_targets_that_name_no_rail_address(capsys, bad, says):
    """An IPv4 or a global/ULA IPv6 address is a target; a link-local one (on
    every link at once) or a non-address fails the task naming it."""
    out = run(roce_net_probe, dict(targets=["198.18.0.1", "fd00:198:18::1", bad]), capsys)
    assert out["failed"] is True and out["msg"].startswith("targets: ") and says in out["msg"], out


@pytest.mark.parametrize(
    "dev, target, why",
    [
        ("rnt-nope-x9", "198.18.0.1", "rnt-nope-x9 does not exist here"),
        ("lo", "198.18.0.1", "lo has no global IPv4 address"),
        ("lo", "fd00:198:18::1", "lo has no global IPv6 address"),
    ],
)
def test_probe_fails_on_an_interface_it_cannot_probe_from(capsys, dev, target, why):
    """A typo in interfaces, or a NIC without an address of the target's
    family, fails the task instead of passing with no probe (read-only: a
    snapshot of the test's namespace, nothing is sent)."""
    out = run(roce_net_probe, dict(targets=[target], interfaces=[dev]), capsys)
    assert out["failed"] is True and why in out["msg"], out
    assert "probes" not in out, out
