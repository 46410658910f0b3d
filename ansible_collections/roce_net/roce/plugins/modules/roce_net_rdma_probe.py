#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2025, roce-net maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# or Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0.txt), at your option.
# SPDX-License-Identifier: GPL-3.0-or-later OR Apache-2.0
"""Ansible module: roce-net's RDMA probe, as a server or as a client of many peers."""

from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: roce_net_rdma_probe
short_description: Prove RDMA works between nodes (or explain why not) with roce-net's probe
version_added: 0.1.0
author:
  - roce-net maintainers (!UNKNOWN)
description:
  - Runs roce-net's C(probe rdma) through the roce_net Python package - an RC
    queue pair between two nodes, chosen from a source IP address as NCCL
    would choose it (device, port, RoCE v2 GID index), a send/recv ping-pong
    and RDMA writes both ways with the data verified.
  - C(mode=server) serves probe clients from O(source) until O(clients)
    sessions ran or O(duration) seconds passed (C(roce_net.probe_rdma_server)).
    It ends within O(duration) + O(timeout) whatever its peers do, so it suits
    C(async) with C(poll=0) - start it, run the clients on the other nodes, then
    collect it with M(ansible.builtin.async_status). It listens on O(source)
    only (O(listen) for another address) and counts a connection as a client
    only once it proved O(token) and asked for no more than O(size) and
    O(latency_size); the others are in RV(rejected).
  - C(mode=client) probes every address in O(peers) (a server must run there),
    up to O(parallel) at once (C(roce_net.probe_rdma), which releases the GIL),
    within ceil(peers / O(parallel)) x (O(connect_retry) + O(timeout)) seconds
    whatever the servers do, and returns one result per peer - passed, or the failure translated into
    its likely cause (C(arp-flux), C(no-route-or-arp), C(timeout), ...) with the
    evidence from this host's snapshot and the commands that fix or confirm it.
  - A host without RDMA (no libibverbs, no kernel support, no devices, no
    C(/dev/infiniband)) is not a module failure - the result says
    RV(rdma_available=false) and RV(no_rdma) holds the library's reason
    (C(no_kernel_support), ...), so the results of every host reach a matrix
    (M(roce_net.roce.roce_net_rdma_matrix)).
  - A probe changes no configuration - C(changed) is always false. In check
    mode nothing is opened or sent - the module reads this host's routes and
    whether RDMA is usable, and says what it would probe.
options:
  mode:
    description:
      - C(server) - serve probe clients; C(client) - probe the servers at O(peers).
    type: str
    choices: [server, client]
    required: true
  netns:
    description: Named network namespace to run in; default is Ansible's own.
    type: str
  sysfs_root:
    description: Read RDMA devices from this sysfs root instead of C(/sys).
    type: path
  etc_root:
    description: Read routing table names under this directory instead of C(/etc).
    type: path
  source:
    description:
      - The local address of the NIC under test; the device, port and GID index
        come from it.
      - Required with C(mode=server) (the address clients reach over RDMA).
      - With C(mode=client), default the source the route to each peer has.
    type: str
  peers:
    description:
      - C(mode=client) only, required there - the addresses of the probe servers
        (their O(source)); also the TCP address of the exchange.
    type: list
    elements: str
  device:
    description: Use this RDMA device instead of the one behind O(source) (checked against the host).
    type: str
  port:
    description: Use this RDMA port (counts from 1).
    type: int
  gid_index:
    description: Use this GID index instead of the lowest RoCE v2 one of O(source).
    type: int
  tcp_port:
    description: TCP port of the exchange (both ends must use the same).
    type: int
    default: 18520
  listen:
    description:
      - C(mode=server) only - the address to listen on; default O(source), so the
        probe is reachable only on the NIC under test. C(0.0.0.0) or C(::) for
        every address of the namespace (clients may then use a management
        address as their peer).
    type: str
  token:
    description:
      - The shared secret both ends must prove they hold before either sends what
        identifies it (host name, interface names and MACs, GID, buffer address
        and rkey); 16 to 1024 bytes, the same on the server and its clients, or
        none on either. A client whose token differs fails with cause
        C(token-mismatch); a server lists such connections in RV(rejected).
      - Default the environment variable C(ROCE_NET_PROBE_TOKEN) of the module
        (the task's C(environment)), else none. Never logged.
      - O(token_file) wins when both are given (as C(--token-file) does over
        C(ROCE_NET_PROBE_TOKEN) in the CLI).
    type: str
  token_file:
    description:
      - A file on the node holding the token (one trailing newline is not part of
        it); used instead of O(token) when given.
    type: path
  timeout:
    description:
      - Seconds. C(mode=client) - the bound of each peer's whole probe.
        C(mode=server) - the bound of each session.
    type: float
    default: 10.0
  clients:
    description:
      - C(mode=server) only - stop after this many client sessions; default 1.
    type: int
  duration:
    description:
      - C(mode=server) only - stop after this many seconds even if fewer clients
        came; default 60. With C(async), give C(async) at least
        O(duration) + O(timeout) + the module's start-up time.
    type: float
  size:
    description:
      - Bytes per RDMA write; default the library's (65536).
      - C(mode=server) - the largest a client may ask for, which bounds the memory
        the server registers per client; give the servers at least the clients' O(size).
    type: int
  iterations:
    description: C(mode=client) only - RDMA writes each way; default the library's (1000).
    type: int
  latency_size:
    description:
      - Bytes per send/recv round trip; default the library's (64).
      - C(mode=server) - the largest a client may ask for.
    type: int
  latency_iterations:
    description: C(mode=client) only - send/recv round trips; default the library's (1000).
    type: int
  mtu:
    description: C(mode=client) only - path MTU of the queue pair; default the smaller active MTU of both ports.
    type: int
    choices: [256, 512, 1024, 2048, 4096]
  parallel:
    description: C(mode=client) only - peers probed at once; default 8.
    type: int
  connect_retry:
    description:
      - C(mode=client) only - for this many seconds, probe a peer again when its
        server refused the TCP connection (C(ECONNREFUSED), the server not
        listening yet - for example just started with C(async)); default 0 (no
        retry, as the CLI).
    type: float
  fail_on_failure:
    description:
      - Fail the task when the probe did not pass - C(mode=client), a peer's
        probe failed or RDMA is not available here; C(mode=server), no session
        ran, a session failed or RDMA is not available here.
      - Leave it false when a matrix is built from every host's results.
    type: bool
    default: false
  libibverbs:
    description: Load libibverbs from this path instead of C(libibverbs.so.1).
    type: path
requirements:
  - roce_net (the roce-net Python package, Python 3.8 or later, with the verbs feature - every wheel has it)
  - libibverbs (rdma-core) on the node, loaded at run time; without it the result is RV(no_rdma) with reason C(no_library)
attributes:
  check_mode:
    support: full
    description:
      - Opens no device and no socket. Reads the route to each peer and whether
        RDMA is usable here (the same answer the real run would give first), and
        returns RV(would_probe) or RV(would_serve). The library's own checks of
        option values and the device/GID choice from O(source) run only in a
        real run.
  diff_mode:
    support: none
    description: Nothing changes.
notes:
  - Always returns C(changed=false).
  - Needs root or the C(rdma) group for C(/dev/infiniband), and a locked-memory
    limit large enough for the buffers (C(ulimit -l)).
  - C(mode=server) listens on O(tcp_port) of O(source) (or O(listen)). Without
    O(token), any peer that reaches it and speaks the protocol learns the host's
    name, interface names and MACs and may write into the probe's buffer for a
    session; give a token where that network is shared (docs/rdma-probe.md,
    "Bounds, exposure and access control").
seealso:
  - module: roce_net.roce.roce_net_rdma_matrix
  - module: ansible.builtin.async_status
"""

EXAMPLES = r"""
- name: Start the probe server on the first node (one session per other node)
  roce_net.roce.roce_net_rdma_probe:
    mode: server
    source: "{{ rdma_address }}"
    clients: "{{ ansible_play_hosts | length - 1 }}"
    duration: 120
  async: 180
  poll: 0
  register: rdma_server
  when: inventory_hostname == ansible_play_hosts[0]

- name: Probe it from the other nodes
  roce_net.roce.roce_net_rdma_probe:
    mode: client
    source: "{{ rdma_address }}"
    peers: ["{{ hostvars[ansible_play_hosts[0]].rdma_address }}"]
    connect_retry: 30
  register: rdma_client
  when: inventory_hostname != ansible_play_hosts[0]

- name: Collect the server's sessions
  ansible.builtin.async_status:
    jid: "{{ rdma_server.ansible_job_id }}"
  register: rdma_server_done
  until: rdma_server_done.finished
  retries: 60
  delay: 2
  when: rdma_server.ansible_job_id is defined

- name: One node against two peers, failing the task on any failure
  roce_net.roce.roce_net_rdma_probe:
    mode: client
    peers: [10.0.1.11, 10.0.2.11]
    fail_on_failure: true
  become: true
"""

RETURN = r"""
mode:
  description: The mode the module ran in.
  returned: always
  type: str
  sample: client
rdma_available:
  description: False when RDMA cannot be used on this host (then RV(no_rdma) says why).
    In check mode, what libibverbs answers now.
  returned: always
  type: bool
no_rdma:
  description: Why RDMA cannot be used here, as the library said it - C(reason)
    (C(no_library), C(no_kernel_support), C(no_devices), C(no_device_files),
    C(not_built)), C(message) (reason, what was seen and what to do) and C(errno);
    null when RDMA is usable.
  returned: always
  type: dict
  sample: {"reason": "no_kernel_support", "errno": 38, "message": "no_kernel_support: ibv_get_device_list failed: ENOSYS ..."}
results:
  description:
    - One entry per peer, in the order of O(peers) - C(peer), C(tcp_port),
      C(status), C(cause), C(message), C(stage), C(value), C(evidence), C(fix),
      C(attempts) and C(report).
    - C(status) is C(ok) (every test passed), C(failed) (the probe ran and
      failed - C(cause) is the likely cause, C(arp-flux), C(no-route-or-arp),
      C(timeout), C(peer-unreachable) and the others of docs/rdma-probe.md,
      with C(stage), the raw C(value), C(evidence) and C(fix)), C(no_rdma)
      (RDMA is not available here - C(cause) is C(no_rdma) and C(reason) the
      library's reason), C(error) (another error - C(cause) is the error kind;
      the task fails) or C(would_probe) (check mode - C(source) and C(route)
      say where the probe would go, or C(route_error) why no route was found).
    - C(report) is the whole client report of the library
      (C(RdmaProbeResult.to_dict()) - endpoints, path MTU, C(latency),
      C(write_to_peer), C(write_from_peer), C(failure), C(notes)); null unless
      the probe ran.
  returned: mode=client
  type: list
  elements: dict
  sample: [{"peer": "198.18.1.11", "tcp_port": 18520, "status": "failed", "cause": "arp-flux",
            "stage": "send_recv", "message": "arp-flux at send_recv: ...", "attempts": 1,
            "evidence": {"mac_owner_on_peer": "r1"}, "fix": ["ip neigh del 198.18.1.11 dev r0"]}]
summary:
  description: The per-peer results counted by C(status) (C(ok), C(failed), C(no_rdma),
    C(error), C(would_probe)); in server mode the sessions by C(ok) / C(failed).
  returned: always
  type: dict
  sample: {"ok": 6, "failed": 1, "no_rdma": 0, "error": 0, "would_probe": 0}
source:
  description: The O(source) the server serves from (the address clients probe).
  returned: mode=server
  type: str
  sample: 198.18.1.11
tcp_port:
  description: The TCP port of the exchange.
  returned: mode=server
  type: int
  sample: 18520
listen:
  description: The TCP address the server listened on.
  returned: mode=server and RDMA available and not check mode
  type: str
  sample: 198.18.1.11:18520
rejected:
  description: C(mode=server) - the connections refused before they counted as a
    client (C(peer_tcp), C(reason), C(elapsed_ms)), the first 64.
  returned: mode=server and RDMA available and not check mode
  type: list
  elements: dict
  sample: [{"peer_tcp": "198.18.1.99:40122", "reason": "the client did not prove this server's probe token",
            "elapsed_ms": 3}]
rejected_count:
  description: C(mode=server) - how many connections were refused in all.
  returned: mode=server and RDMA available and not check mode
  type: int
stopped:
  description: Why the server stopped - C(clients) (the count was reached) or C(duration).
  returned: mode=server and RDMA available and not check mode
  type: str
ok:
  description: C(mode=server) - every session passed and at least one ran.
    C(mode=client) - every peer's probe passed. False in check mode.
  returned: always
  type: bool
sessions:
  description: C(mode=server) - one library report per client session
    (C(RdmaProbeResult.to_dict()), role C(server)), in the order they ended.
  returned: mode=server
  type: list
  elements: dict
would_probe:
  description: Check mode, C(mode=client) - the probes a real run would make
    (the same entries as RV(results), status C(would_probe)).
  returned: mode=client and check mode
  type: list
  elements: dict
would_serve:
  description: Check mode, C(mode=server) - what a real run would serve
    (C(source), C(tcp_port), C(clients), C(duration), C(timeout), C(listen), and
    C(token), whether a token was given).
  returned: mode=server and check mode
  type: dict
msg:
  description: One line saying what happened (or, in check mode, what would).
  returned: always
  type: str
  sample: "RDMA to 1 of 2 peers failed: 198.18.2.11 arp-flux"
"""

import ipaddress
import time
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule, env_fallback

from ansible_collections.roce_net.roce.plugins.module_utils.common import (
    HOST_ARGS,
    U16_MAX,
    U32_MAX,
    USIZE_MAX,
    check_int_ranges,
    error_result,
    host_from_params,
    require_roce_net,
)

#: Options only one mode takes (their defaults are None so a mistaken one is seen).
CLIENT_ONLY = ("peers", "iterations", "latency_iterations", "mtu", "parallel", "connect_retry")
SERVER_ONLY = ("clients", "duration", "listen")
#: The library's no_rdma reasons (roce-net/src/model/verbs.rs, NoRdmaReason).
NO_RDMA_REASONS = ("not_built", "no_library", "no_kernel_support", "no_devices", "no_device_files")
STATUSES = ("ok", "failed", "no_rdma", "error", "would_probe")
DEFAULT_CLIENTS = 1
DEFAULT_DURATION = 60.0
DEFAULT_PARALLEL = 8
#: Each integer option's range: what the library accepts, within the width of
#: the binding's parameter (roce-net-py/src/rdma.rs; parallel is the module's
#: own thread count).
INT_RANGES = dict(
    port=(1, U32_MAX),
    gid_index=(0, U32_MAX),
    tcp_port=(1, U16_MAX),
    clients=(1, USIZE_MAX),
    size=(1, USIZE_MAX),
    iterations=(1, U32_MAX),
    latency_size=(1, USIZE_MAX),
    latency_iterations=(1, U32_MAX),
    parallel=(1, None),
)
#: Pause between attempts while a server refuses the connection.
RETRY_PAUSE = 0.5


def no_rdma_info(err):
    """A NoRdmaError as data: the library's reason (the message's first word), message, errno."""
    message = getattr(err, "message", None) or str(err)
    head = message.split(":", 1)[0].strip()
    return dict(reason=head if head in NO_RDMA_REASONS else "unknown", message=message, errno=getattr(err, "errno", None))


def no_rdma_from_view(view):
    """The same data from a VerbsView's ``unavailable`` (check mode), or None."""
    u = getattr(view, "unavailable", None)
    if u is None:
        return None
    return dict(reason=str(u.reason), message="%s: %s" % (u.reason, u.detail), errno=None)


def refused(report):
    """The server refused the TCP connection (it is not listening yet)."""
    f = report.get("failure") or {}
    value = f.get("value") or {}
    return f.get("cause") == "peer-unreachable" and value.get("name") == "ECONNREFUSED"


def peer_result(peer, tcp_port, report, attempts):
    """One peer's entry of ``results`` from the library's client report (a dict)."""
    f = report.get("failure")
    entry = dict(peer=peer, tcp_port=tcp_port, attempts=attempts, report=report)
    if report.get("ok"):
        entry.update(status="ok", cause=None, stage=None, value=None, evidence={}, fix=[], message=ok_text(report))
    else:
        f = f or {}
        entry.update(
            status="failed",
            cause=f.get("cause", "unknown"),
            stage=f.get("stage"),
            value=f.get("value"),
            evidence=f.get("evidence") or {},
            fix=list(f.get("fix") or []),
            message=f.get("message") or "the probe failed without a failure report",
        )
    return entry


def ok_text(report):
    """'RDMA ok: ...' with the latency and both bandwidths of a passed probe."""
    parts = []
    lat = report.get("latency") or {}
    if lat.get("median_us") is not None:
        parts.append("send/recv median %.2f us" % lat["median_us"])
    for key, what in (("write_to_peer", "write to peer"), ("write_from_peer", "write from peer")):
        bw = report.get(key) or {}
        if bw.get("gbit_per_s") is not None:
            parts.append("%s %.2f Gb/s%s" % (what, bw["gbit_per_s"], ", verified" if bw.get("verified") else ""))
    return "RDMA ok" + (": " + "; ".join(parts) if parts else "")


def probe_one(rn, host, peer, kwargs, connect_retry, clock=time.monotonic, sleep=time.sleep):
    """Probe one peer; again while its server refuses the connection and
    ``connect_retry`` seconds are not over. Returns its ``results`` entry."""
    tcp_port = kwargs.get("tcp_port", 18520)
    end = clock() + (connect_retry or 0)
    attempts = 0
    while True:
        attempts += 1
        try:
            report = rn.probe_rdma(host, peer, **kwargs).to_dict()
        except rn.NoRdmaError as err:
            info = no_rdma_info(err)
            return dict(peer=peer, tcp_port=tcp_port, attempts=attempts, report=None, status="no_rdma",
                        cause="no_rdma", reason=info["reason"], stage=None, value=None, evidence={},
                        fix=[], message=info["message"], no_rdma=info)
        except rn.RoceNetError as err:
            return dict(peer=peer, tcp_port=tcp_port, attempts=attempts, report=None, status="error",
                        cause=getattr(err, "kind", "error"), stage=None, value=None, evidence={}, fix=[],
                        message=str(err), error=error_result(err))
        if refused(report) and clock() + RETRY_PAUSE < end:
            sleep(RETRY_PAUSE)
            continue
        return peer_result(peer, tcp_port, report, attempts)


def would_probe(rn, host, peer, source, tcp_port):
    """Check mode: where a probe to ``peer`` would go (the route, read only)."""
    entry = dict(peer=peer, tcp_port=tcp_port, status="would_probe", cause=None, stage=None, value=None, evidence={},
                 fix=[], attempts=0, report=None, source=source, route=None)
    try:
        d = host.route_get(peer, src=source)
    except (rn.RoceNetError, ValueError) as err:
        # No route is this entry's answer (the real run would fail there too), not the module's.
        entry["route_error"] = str(err)
        entry["message"] = "would probe RDMA to %s:%d; no route: %s" % (peer, tcp_port, err)
        return entry
    entry["route"] = dict(dev=d.dev, prefsrc=d.prefsrc, gateway=d.gateway, table=d.table)
    entry["source"] = source or d.prefsrc
    entry["message"] = "would probe RDMA to %s:%d from %s (dev %s)" % (peer, tcp_port, entry["source"], d.dev)
    return entry


def count(statuses):
    """Counts by status, every status present."""
    out = dict((s, 0) for s in STATUSES)
    for s in statuses:
        out[s] = out.get(s, 0) + 1
    return out


def client_msg(results):
    """The one line of a client run."""
    bad = [r for r in results if r["status"] != "ok"]
    if not bad:
        return "RDMA ok to all %d peer(s)" % len(results)
    if all(r["status"] == "no_rdma" for r in results):
        return "RDMA not available on this host (%s): %s" % (results[0]["reason"], results[0]["message"])
    return "RDMA to %d of %d peer(s) did not pass: %s" % (
        len(bad), len(results), "; ".join("%s %s" % (r["peer"], r["cause"]) for r in bad[:8]))


def check_args(module, p):
    """Mode/option pairing and address syntax; fails the module on bad input."""
    wrong = CLIENT_ONLY if p["mode"] == "server" else SERVER_ONLY
    given = [k for k in wrong if p.get(k) is not None]
    if given:
        module.fail_json(msg="%s: only for mode=%s" % (", ".join(given), "client" if p["mode"] == "server" else "server"))
    try:
        source = str(ipaddress.ip_address(p["source"])) if p["source"] else None
        peers = [str(ipaddress.ip_address(x)) for x in (p["peers"] or [])]
        if p.get("listen"):
            ipaddress.ip_address(p["listen"])
    except ValueError as err:
        module.fail_json(msg="source/peers/listen: %s" % err)
    if p["mode"] == "client" and not peers:
        module.fail_json(msg="peers: give at least one probe server address")
    if len(set(peers)) != len(peers):
        module.fail_json(msg="peers: %s listed twice" % sorted(x for x in peers if peers.count(x) > 1)[0])
    check_int_ranges(module, p, INT_RANGES)
    for k in ("timeout", "duration"):
        if p.get(k) is not None and not p[k] > 0:
            module.fail_json(msg="%s %s: must be more than 0 seconds" % (k, p[k]))
    if p.get("connect_retry") is not None and p["connect_retry"] < 0:
        module.fail_json(msg="connect_retry %s: must not be negative" % p["connect_retry"])
    return source, peers


def common_kwargs(p, source):
    """Keyword arguments both library calls take."""
    kw = dict(tcp_port=p["tcp_port"], timeout=p["timeout"])
    for k in ("device", "port", "gid_index", "libibverbs", "token_file", "size", "latency_size"):
        if p.get(k) is not None:
            kw[k] = p[k]
    # The file wins over the token (given, or from ROCE_NET_PROBE_TOKEN), as in the CLI.
    if p.get("token") and p.get("token_file") is None:
        kw["token"] = p["token"]
    if source is not None:
        kw["source"] = source
    return kw


def run_client(module, rn, host, p, source, peers):
    """mode=client: every peer, ``parallel`` at once."""
    kw = common_kwargs(p, source)
    for k in ("iterations", "latency_iterations", "mtu"):
        if p.get(k) is not None:
            kw[k] = p[k]
    if module.check_mode:
        no_rdma = no_rdma_from_view(rn.verbs_view(host, **({"libibverbs": p["libibverbs"]} if p["libibverbs"] else {})))
        results = [would_probe(rn, host, peer, source, p["tcp_port"]) for peer in peers]
        msg = "check mode: would probe RDMA to %d peer(s): %s" % (len(peers), ", ".join(peers))
        if no_rdma:
            msg += "; RDMA is not available here now (%s)" % no_rdma["reason"]
        module.exit_json(changed=False, mode="client", ok=False, rdma_available=no_rdma is None, no_rdma=no_rdma,
                         results=results, would_probe=results, summary=count(r["status"] for r in results), msg=msg)
    workers = min(p["parallel"] or DEFAULT_PARALLEL, len(peers))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda peer: probe_one(rn, host, peer, kw, p["connect_retry"]), peers))
    no_rdma = next((r["no_rdma"] for r in results if r["status"] == "no_rdma"), None)
    result = dict(
        changed=False,
        mode="client",
        ok=all(r["status"] == "ok" for r in results),
        rdma_available=no_rdma is None,
        no_rdma=no_rdma,
        results=results,
        summary=count(r["status"] for r in results),
        msg=client_msg(results),
    )
    errors = [r for r in results if r["status"] == "error"]
    if errors:
        first = errors[0]["error"]
        result.update(first)
        result["msg"] = "probing RDMA to %s: %s" % (errors[0]["peer"], first["msg"])
        module.fail_json(**result)
    if p["fail_on_failure"] and not result["ok"]:
        module.fail_json(**result)
    module.exit_json(**result)


def run_server(module, rn, host, p, source):
    """mode=server: serve until the clients came or the duration passed."""
    clients = p["clients"] if p["clients"] is not None else DEFAULT_CLIENTS
    duration = p["duration"] if p["duration"] is not None else DEFAULT_DURATION
    base = dict(changed=False, mode="server", source=source, tcp_port=p["tcp_port"])
    if module.check_mode:
        no_rdma = no_rdma_from_view(rn.verbs_view(host, **({"libibverbs": p["libibverbs"]} if p["libibverbs"] else {})))
        serve = dict(source=source, tcp_port=p["tcp_port"], clients=clients, duration=duration, timeout=p["timeout"],
                     listen=p.get("listen") or source, token=bool(p.get("token") or p.get("token_file")))
        msg = "check mode: would serve %d RDMA probe client(s) from %s on TCP port %d for at most %s s" % (
            clients, source, p["tcp_port"], duration)
        if no_rdma:
            msg += "; RDMA is not available here now (%s)" % no_rdma["reason"]
        module.exit_json(ok=False, rdma_available=no_rdma is None, no_rdma=no_rdma, sessions=[], would_serve=serve,
                         summary=dict(ok=0, failed=0), msg=msg, **base)
    kw = common_kwargs(p, source)
    if p.get("listen"):
        kw["listen"] = p["listen"]
    try:
        r = rn.probe_rdma_server(host, clients=clients, duration=duration, **kw).to_dict()
    except rn.NoRdmaError as err:
        info = no_rdma_info(err)
        result = dict(ok=False, rdma_available=False, no_rdma=info, sessions=[], summary=dict(ok=0, failed=0),
                      msg="RDMA not available on this host (%s): %s" % (info["reason"], info["message"]), **base)
        if p["fail_on_failure"]:
            module.fail_json(**result)
        module.exit_json(**result)
    except rn.RoceNetError as err:
        module.fail_json(**error_result(err, sessions=[], **base))
    sessions = r["sessions"]
    passed = sum(1 for s in sessions if s.get("ok"))
    bad = [s for s in sessions if not s.get("ok")]
    msg = "served %d RDMA probe session(s) from %s, %d passed (stopped: %s)" % (
        len(sessions), source, passed, r["stopped"])
    if r.get("rejected_count"):
        msg += "; refused %d connection(s) that did not prove themselves" % r["rejected_count"]
    if bad:
        msg += "; failed: %s" % "; ".join(
            "%s %s" % (s.get("peer_tcp"), (s.get("failure") or {}).get("cause", "unknown")) for s in bad[:8])
    result = dict(ok=r["ok"], rdma_available=True, no_rdma=None, listen=r["listen"], stopped=r["stopped"],
                  sessions=sessions, rejected=r.get("rejected", []), rejected_count=r.get("rejected_count", 0),
                  summary=dict(ok=passed, failed=len(bad)), msg=msg, **base)
    if p["fail_on_failure"] and not r["ok"]:
        module.fail_json(**result)
    module.exit_json(**result)


def main():
    argument_spec = dict(HOST_ARGS)
    argument_spec.update(
        mode=dict(type="str", choices=["server", "client"], required=True),
        source=dict(type="str"),
        peers=dict(type="list", elements="str"),
        device=dict(type="str"),
        port=dict(type="int"),
        gid_index=dict(type="int"),
        tcp_port=dict(type="int", default=18520),
        listen=dict(type="str"),
        token=dict(type="str", no_log=True, fallback=(env_fallback, ["ROCE_NET_PROBE_TOKEN"])),
        token_file=dict(type="path"),
        timeout=dict(type="float", default=10.0),
        clients=dict(type="int"),
        duration=dict(type="float"),
        size=dict(type="int"),
        iterations=dict(type="int"),
        latency_size=dict(type="int"),
        latency_iterations=dict(type="int"),
        mtu=dict(type="int", choices=[256, 512, 1024, 2048, 4096]),
        parallel=dict(type="int"),
        connect_retry=dict(type="float"),
        fail_on_failure=dict(type="bool", default=False),
        libibverbs=dict(type="path"),
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        required_if=[("mode", "server", ["source"]), ("mode", "client", ["peers"])],
        supports_check_mode=True,
    )
    p = module.params
    source, peers = check_args(module, p)
    rn = require_roce_net(module, "probe_rdma", "probe_rdma_server", "verbs_view", "NoRdmaError", "Host.route_get")
    try:
        host = host_from_params(p)
    except rn.RoceNetError as err:
        module.fail_json(**error_result(err))
    if p["mode"] == "server":
        run_server(module, rn, host, p, source)
    else:
        run_client(module, rn, host, p, source, peers)


if __name__ == "__main__":
    main()
