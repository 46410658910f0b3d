#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2025, roce-net maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# or Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0.txt), at your option.
# SPDX-License-Identifier: GPL-3.0-or-later OR Apache-2.0
"""Ansible module: a client x server matrix of RDMA probe results, with a verdict."""

from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: roce_net_rdma_matrix
short_description: Turn every host's RDMA probe results into a client x server matrix and a verdict
version_added: 0.1.0
author:
  - roce-net maintainers (!UNKNOWN)
description:
  - Takes the registered results of M(roce_net.roce.roce_net_rdma_probe) -
    C(mode=client) from the clients, C(mode=server) (collected with
    M(ansible.builtin.async_status)) from the servers - and builds a matrix
    with one row per client and one column per server address, a text table,
    counts and a verdict.
  - "Each cell is C(ok), C(failed) (with the probe's likely cause: C(arp-flux),
    C(no-route-or-arp), C(timeout), ...), C(no_rdma) (RDMA not available on the
    client, or on the server when the client found no server listening), C(error)
    (the task failed or the host was unreachable) or C(would_probe) (check mode)."
  - "The verdict: C(check_mode) when the results are check-mode ones; C(fail)
    when a cell failed or errored or a server failed; else C(no_rdma) when RDMA
    is not available on some host (RV(msg) is C(RDMA not available on these
    hosts: ...)); else C(pass) when every probed pair passed."
  - Pure - reads no host and needs no roce_net package; run it once on the
    controller (C(run_once=true), C(delegate_to=localhost)).
options:
  clients:
    description:
      - The client results by host name - the registered result of
        M(roce_net.roce.roce_net_rdma_probe) with C(mode=client) on each host.
        Skipped results (hosts that are no client) are ignored; failed and
        unreachable ones, and empty ones (no result - give C({}) for a host
        that should have probed but has no registered result), become C(error)
        cells.
    type: dict
    required: true
  servers:
    description:
      - The server results by host name (after M(ansible.builtin.async_status),
        or the result of a synchronous run). They name the columns (a server's
        C(source) address is its column) and say when a server had no RDMA.
    type: dict
    default: {}
  names:
    description: Column labels by server address, instead of the server's host name.
    type: dict
    default: {}
requirements: []
attributes:
  check_mode:
    support: full
    description: Pure; the same matrix in check mode (of check-mode probe results, verdict C(check_mode)).
  diff_mode:
    support: none
    description: Nothing changes.
notes:
  - Always returns C(changed=false); never fails because of the verdict (assert on RV(passed)).
seealso:
  - module: roce_net.roce.roce_net_rdma_probe
"""

EXAMPLES = r"""
- name: Matrix of the probe results on the controller
  roce_net.roce.roce_net_rdma_matrix:
    clients: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars) | map(attribute='rdma_client', default={}))) }}"
    servers: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars) | map(attribute='rdma_server_done', default={}))) }}"
  run_once: true
  delegate_to: localhost
  register: rdma_matrix

- name: Show it
  ansible.builtin.debug:
    msg: "{{ rdma_matrix.table }}"
  run_once: true

- name: Pass only when RDMA works between every pair
  ansible.builtin.assert:
    that: rdma_matrix.passed
    fail_msg: "{{ rdma_matrix.msg }}"
    success_msg: "{{ rdma_matrix.msg }}"
  run_once: true
"""

RETURN = r"""
columns:
  description: One entry per column - C(peer) (the server address), C(server) (its host, or null
    when no server result names it) and C(label).
  returned: always
  type: list
  elements: dict
  sample: [{"peer": "198.18.1.11", "server": "h1", "label": "h1 198.18.1.11"}]
matrix:
  description: One row per client - C(client) and C(cells), one per column in the order of
    RV(columns); a cell the client did not probe has status C(not_probed).
  returned: always
  type: list
  elements: dict
cells:
  description:
    - Every probed pair - C(client), C(server), C(peer), C(label) (the column's), C(status) (C(ok), C(failed),
      C(no_rdma), C(error), C(would_probe)), C(cause), C(reason) (C(no_rdma) -
      the library's reason), C(side) (C(no_rdma) - C(client) or C(server)),
      C(message), C(fix), C(text) (the table's short form).
  returned: always
  type: list
  elements: dict
  sample: [{"client": "h2", "server": "h1", "peer": "198.18.1.11", "status": "no_rdma",
            "cause": "no_rdma", "reason": "no_kernel_support", "side": "client", "text": "no_rdma (no_kernel_support)"}]
servers:
  description: One entry per server - C(host), C(peer) (its address), C(status) (C(ok), C(failed),
    C(idle) - no session ran, C(no_rdma), C(error), C(would_serve)), C(reason), C(sessions), C(message).
  returned: always
  type: list
  elements: dict
table:
  description: The matrix as text lines (clients down, servers across), then one line per server.
  returned: always
  type: list
  elements: str
  sample: ["client \\ server  h1 198.18.1.11", "h2               ok 2.13us 97.1/96.9Gb/s", "h3               arp-flux"]
summary:
  description: C(pairs) (probed cells), the cells by status, and C(causes) (failed cells by cause).
  returned: always
  type: dict
  sample: {"pairs": 7, "ok": 5, "failed": 2, "no_rdma": 0, "error": 0, "would_probe": 0, "causes": {"arp-flux": 1, "timeout": 1}}
no_rdma_hosts:
  description: The hosts without RDMA - C(host), C(role) (C(client) / C(server)) and C(reason) - each once.
  returned: always
  type: list
  elements: dict
problems:
  description: The cells that did not pass, with their message and fix.
  returned: always
  type: list
  elements: dict
verdict:
  description: C(pass), C(fail), C(no_rdma) or C(check_mode).
  returned: always
  type: str
  sample: no_rdma
passed:
  description: The verdict is C(pass).
  returned: always
  type: bool
msg:
  description: The verdict in one line.
  returned: always
  type: str
  sample: "RDMA not available on these hosts: h1 (no_kernel_support), h2 (no_kernel_support)"
"""

from ansible.module_utils.basic import AnsibleModule

CELL_STATUSES = ("ok", "failed", "no_rdma", "error", "would_probe")


def is_skipped(r):
    """A result of a task that was skipped on that host (no client / no server there)."""
    return bool(r) and bool(r.get("skipped")) and "mode" not in r


def task_error(r):
    """Why a registered result has no usable probe data, or None when it has some."""
    if not r:
        return "no_result", "no result from this host (it failed or was unreachable before the probe)"
    if r.get("unreachable"):
        return "unreachable", "host unreachable: %s" % r.get("msg", "")
    if r.get("ansible_job_id") and not r.get("finished") and "mode" not in r:
        return "not_finished", "the async job %s did not finish (collect it with async_status)" % r["ansible_job_id"]
    if r.get("failed") and not r.get("results") and not r.get("sessions") and not r.get("no_rdma"):
        return r.get("kind") or "task_failed", r.get("msg") or "the task failed"
    if "mode" not in r:
        return "not_a_probe", "not a roce_net_rdma_probe result (keys: %s)" % ", ".join(sorted(r)[:8])
    return None


def server_entry(host, r):
    """A server's summary (or None when the host ran no server)."""
    if is_skipped(r):
        return None
    peer = r.get("source") or ((r.get("invocation") or {}).get("module_args") or {}).get("source")
    e = dict(host=host, peer=peer, reason=None, sessions=len(r.get("sessions") or []), message=r.get("msg", ""))
    err = task_error(r)
    if err:
        e.update(status="error", reason=err[0], message=err[1])
    elif r.get("mode") != "server":
        e.update(status="error", reason="not_a_server", message="a mode=%s result given as a server's" % r.get("mode"))
    elif r.get("no_rdma") and not r.get("rdma_available", True) and "would_serve" not in r:
        e.update(status="no_rdma", reason=r["no_rdma"].get("reason"))
    elif "would_serve" in r:
        e.update(status="would_serve")
    elif r.get("ok"):
        e.update(status="ok")
    elif r.get("sessions"):
        e.update(status="failed")
    else:
        e.update(status="idle")
    return e


def cell_text(c):
    """The table's short form of a cell."""
    s = c["status"]
    if s == "ok":
        rep = c.get("report") or {}
        lat = (rep.get("latency") or {}).get("median_us")
        to = (rep.get("write_to_peer") or {}).get("gbit_per_s")
        frm = (rep.get("write_from_peer") or {}).get("gbit_per_s")
        parts = ["ok"]
        if lat is not None:
            parts.append("%.2fus" % lat)
        if to is not None and frm is not None:
            parts.append("%.1f/%.1fGb/s" % (to, frm))
        return " ".join(parts)
    if s == "failed":
        return c.get("cause") or "failed"
    if s == "no_rdma":
        return "no_rdma (%s%s)" % ("server " if c.get("side") == "server" else "", c.get("reason"))
    if s == "error":
        return "error (%s)" % c.get("cause")
    if s == "would_probe":
        return "would probe"
    return "-"


def build(clients, servers, names):
    """The whole matrix from the registered results (pure)."""
    srv = [e for e in (server_entry(h, r or {}) for h, r in servers.items()) if e]
    by_peer = dict((e["peer"], e) for e in srv if e["peer"])
    columns = [dict(peer=e["peer"], server=e["host"]) for e in srv if e["peer"]]
    rows = []
    for host, r in clients.items():
        r = r or {}
        if is_skipped(r):
            continue
        rows.append((host, r))
        for x in r.get("results") or []:
            if x.get("peer") and x["peer"] not in [c["peer"] for c in columns]:
                columns.append(dict(peer=x["peer"], server=None))
    for c in columns:
        c["label"] = names.get(c["peer"]) or ("%s %s" % (c["server"], c["peer"]) if c["server"] else c["peer"])

    matrix, cells = [], []
    for host, r in rows:
        err = task_error(r)
        got = dict((x.get("peer"), x) for x in r.get("results") or [])
        row = []
        for col in columns:
            c = dict(client=host, server=col["server"], peer=col["peer"], label=col["label"], cause=None,
                     reason=None, side=None, message="", fix=[], report=None)
            x = got.get(col["peer"])
            if x is None and err:
                c.update(status="error", cause=err[0], message=err[1])
            elif x is None:
                c.update(status="not_probed")
            else:
                c.update(status=x.get("status", "error"), cause=x.get("cause"), reason=x.get("reason"),
                         message=x.get("message", ""), fix=list(x.get("fix") or []), report=x.get("report"))
                if c["status"] == "no_rdma":
                    c["side"] = "client"
                s = by_peer.get(col["peer"])
                if s and s["status"] == "no_rdma" and c["status"] == "failed" and c["cause"] == "peer-unreachable":
                    # No server listened because the server has no RDMA: that is the answer.
                    c.update(status="no_rdma", cause="no_rdma", reason=s["reason"], side="server",
                             message="the server %s has no RDMA (%s); this client's probe: %s"
                             % (s["host"], s["reason"], c["message"]))
                if c["status"] not in CELL_STATUSES:
                    c.update(status="error", cause="bad_status", message="unknown probe status %r" % x.get("status"))
            c["text"] = cell_text(c)
            row.append(c)
            if c["status"] != "not_probed":
                cells.append(c)
        matrix.append(dict(client=host, cells=row))
    return columns, matrix, cells, srv


def table(columns, matrix, srv):
    """Text lines: a header, one line per client, one per server."""
    head = ["client \\ server"] + [c["label"] for c in columns]
    lines = [[row["client"]] + [c["text"] for c in row["cells"]] for row in matrix]
    widths = [max(len(x[i]) for x in [head] + lines) for i in range(len(head))]
    out = ["  ".join(x[i].ljust(widths[i]) for i in range(len(x))).rstrip() for x in [head] + lines]
    for e in srv:
        out.append("server %s %s: %s%s" % (e["host"], e["peer"] or "?", e["status"],
                                           " (%s)" % e["reason"] if e["reason"] else ""))
    return out


def verdict(cells, srv):
    """(verdict, msg, no_rdma_hosts, summary)."""
    summary = dict((s, 0) for s in CELL_STATUSES)
    summary["pairs"] = len(cells)
    causes = {}
    for c in cells:
        summary[c["status"]] += 1
        if c["status"] == "failed":
            causes[c["cause"]] = causes.get(c["cause"], 0) + 1
    summary["causes"] = causes
    no_rdma, seen = [], set()
    for e in srv:
        if e["status"] == "no_rdma" and e["host"] not in seen:
            seen.add(e["host"])
            no_rdma.append(dict(host=e["host"], role="server", reason=e["reason"]))
    for c in cells:
        if c["status"] == "no_rdma" and c["side"] == "client" and c["client"] not in seen:
            seen.add(c["client"])
            no_rdma.append(dict(host=c["client"], role="client", reason=c["reason"]))
    hosts = ", ".join("%s (%s)" % (h["host"], h["reason"]) for h in no_rdma)
    bad = [c for c in cells if c["status"] in ("failed", "error")]
    bad_srv = [e for e in srv if e["status"] in ("failed", "error")]
    if summary["would_probe"] or any(e["status"] == "would_serve" for e in srv):
        return "check_mode", "check mode: would probe %d pair(s)%s" % (
            len(cells), "; RDMA not available now on: " + hosts if hosts else ""), no_rdma, summary
    if not cells and not srv:
        return "fail", "no RDMA probe results (no client and no server ran)", no_rdma, summary
    if bad or bad_srv or not cells:
        parts = []
        if bad:
            parts.append("RDMA failed on %d of %d pair(s): %s" % (len(bad), len(cells), "; ".join(
                "%s -> %s %s" % (c["client"], c["server"] or c["peer"], c["cause"]) for c in bad[:10])))
        if bad_srv:
            parts.append("server(s) %s" % "; ".join(
                "%s %s (%s)" % (e["host"], e["status"], e["reason"] or e["message"]) for e in bad_srv))
        if not cells:
            parts.append("no client probed")
        if hosts:
            parts.append("RDMA not available on: " + hosts)
        return "fail", "; ".join(parts), no_rdma, summary
    if no_rdma or summary["no_rdma"]:
        msg = "RDMA not available on these hosts: " + hosts
        if summary["ok"]:
            msg += "; %d of %d pair(s) passed" % (summary["ok"], len(cells))
        return "no_rdma", msg, no_rdma, summary
    return "pass", "RDMA ok on all %d pair(s)" % len(cells), no_rdma, summary


def main():
    module = AnsibleModule(
        argument_spec=dict(
            clients=dict(type="dict", required=True),
            servers=dict(type="dict", default={}),
            names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params
    bad = [h for h, r in list(p["clients"].items()) + list(p["servers"].items()) if r is not None and not isinstance(r, dict)]
    if bad:
        module.fail_json(msg="clients/servers: the result of %s is not a dict" % ", ".join(bad))
    columns, matrix, cells, srv = build(p["clients"], p["servers"], dict((str(k), str(v)) for k, v in p["names"].items()))
    v, msg, no_rdma, summary = verdict(cells, srv)
    problems = [dict((k, c[k]) for k in ("client", "server", "peer", "status", "cause", "reason", "side", "message", "fix"))
                for c in cells if c["status"] not in ("ok", "would_probe")]
    for row in matrix:
        for c in row["cells"]:
            c.pop("report", None)
    module.exit_json(
        changed=False,
        columns=columns,
        matrix=matrix,
        cells=cells,
        servers=srv,
        table=table(columns, matrix, srv),
        summary=summary,
        no_rdma_hosts=no_rdma,
        problems=problems,
        verdict=v,
        passed=v == "pass",
        msg=msg,
    )


if __name__ == "__main__":
    main()
