# Copyright: (c) 2025, roce-net maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# or Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0.txt), at your option.
# SPDX-License-Identifier: GPL-3.0-or-later OR Apache-2.0
"""Unit tests of the roce_net module (no root: the pure parts, and
state=confirmed / rolled_back against the test's own namespace with an empty
state directory). The lab tests in roce-net-py/tests/test_ansible.py run it
against real namespaces."""

from __future__ import absolute_import, annotations, division, print_function

import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.roce_net.roce.plugins.modules import roce_net as mod

# Where roce_net.confirm / roce_net.rollback act (roce-net/src/apply/mod.rs):
# confirm only on pending_confirm, rollback on every journal not rolled_back.
JOURNAL_STATES = ["applying", "pending_confirm", "committed", "rolled_back", "rollback_failed"]


@pytest.mark.parametrize("journal", JOURNAL_STATES + [None])
def test_would_change_follows_the_library(journal):
    assert mod.would_change("confirmed", journal) is (journal == "pending_confirm")
    assert mod.would_change("rolled_back", journal) is (journal not in (None, "rolled_back"))


def test_split_diff_puts_old_values_before_and_new_after():
    before, after = mod.split_diff(
        "+ rule from 198.18.0.12 lookup 1002 pref 1002 proto 201\n"
        "- neigh 198.18.0.100 dev r1 lladdr 02:00:00:00:00:01\n"
        "~ sysctl net.ipv4.conf.r1.arp_ignore 0 -> 1\n"
    )
    assert before == [
        "neigh 198.18.0.100 dev r1 lladdr 02:00:00:00:00:01",
        "sysctl net.ipv4.conf.r1.arp_ignore 0",
    ]
    assert after == [
        "rule from 198.18.0.12 lookup 1002 pref 1002 proto 201",
        "sysctl net.ipv4.conf.r1.arp_ignore 1",
    ]


def run(args, capsys, check=False):
    if check:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            mod.main()
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("state", ["confirmed", "rolled_back"])
@pytest.mark.parametrize("check", [True, False])
def test_nothing_to_settle_is_unchanged_in_check_and_real_runs(tmp_path, capsys, state, check):
    out = run(dict(state=state, state_dir=str(tmp_path)), capsys, check=check)
    assert out["changed"] is False, out
    assert out["journal_state"] is None and "absent" in out["msg"], out
    assert "plan" not in out and "changes" not in out, out
    assert list(tmp_path.iterdir()) == []


def test_applied_without_a_policy_fails(capsys):
    out = run(dict(state="applied"), capsys)
    assert out["failed"] is True and "policy" in out["msg"], out


def test_a_bad_policy_fails_with_the_field_path(capsys, tmp_path):
    out = run(dict(policy=dict(version=1, rp_filter="sideways"), state_dir=str(tmp_path)), capsys, check=True)
    assert out["failed"] is True and "rp_filter" in out["msg"], out


@pytest.mark.parametrize("check", [True, False])
def test_persist_with_a_confirm_timeout_is_refused_before_anything(tmp_path, capsys, check):
    """Nothing is persisted for a change that is not confirmed: the module never
    confirms by itself, so persist belongs on the state=confirmed task."""
    args = dict(policy=dict(version=1), confirm_timeout=120, persist="sysctl.d",
                persist_root=str(tmp_path), state_dir=str(tmp_path / "run"))
    out = run(args, capsys, check=check)
    assert out["failed"] is True and out.get("changed", False) is False, out
    assert "state=confirmed" in out["msg"] and "confirm_timeout" in out["msg"], out
    assert "plan" not in out and "applied" not in out and "persisted" not in out, out
    assert list(tmp_path.iterdir()) == []


def test_persist_on_the_confirming_task_needs_the_policy(tmp_path, capsys):
    out = run(dict(state="confirmed", persist="sysctl.d", state_dir=str(tmp_path)), capsys)
    assert out["failed"] is True and "policy" in out["msg"], out
    assert list(tmp_path.iterdir()) == []


def test_persist_is_not_taken_with_a_rollback(tmp_path, capsys):
    out = run(dict(state="rolled_back", persist="sysctl.d", state_dir=str(tmp_path)), capsys)
    assert out["failed"] is True and "rolled_back" in out["msg"], out
    assert list(tmp_path.iterdir()) == []
