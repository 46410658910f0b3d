"""The VM test bed: Debian guests under qemu, on a bridge inside a lab namespace.

Used by the VM test tier (tests/vm/, run by scripts/test-vm.sh) and by the demo
(scripts/vm-lab.sh). See docs/vm.md.

What it does to the machine: one network namespace `rnt-vm-<pid>-<n>` per bed holding a
bridge and the guests' tap devices (the machine's own namespace is never
touched), one temporary directory for the guests' overlays, sockets and console
logs, and the qemu processes it starts (ended by pid). All of it is removed when
the `Bed` closes, also on an exception or on SIGINT, SIGTERM or SIGHUP. Guests
are driven through qemu-guest-agent over virtio-serial: no management network.
The roce-net build is shared read-only into each guest at /mnt/roce-net (9p).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

REPO = Path(__file__).resolve().parents[2]


def log(msg: str) -> None:
    print(f"vm: {msg}", flush=True)


#: The 9p tag of the bed's writable shared directory (`Bed.scratch`).
SCRATCH_TAG = "rnscratch"


def mount_scratch(path: str) -> str:
    """A guest's shell command that mounts the bed's writable shared directory at PATH."""
    return f"install -d {path} && (mountpoint -q {path} || mount -t 9p -o trans=virtio,version=9p2000.L {SCRATCH_TAG} {path})"


class VmError(RuntimeError):
    """Something about the test bed failed; the message says what and on which guest."""


def accel() -> tuple[str, str]:
    """The accelerator to use and why: KVM only where the CPU does hardware
    virtualisation and /dev/kvm opens; TCG (plain emulation) otherwise.

    Under software nested virtualisation (`kvm_pvm`) /dev/kvm exists but a stock
    Debian kernel does not boot (docs/vm.md), and the CPU shows neither vmx nor svm.
    ROCE_NET_VM_ACCEL=kvm|tcg overrides.
    """
    forced = os.environ.get("ROCE_NET_VM_ACCEL")
    if forced in ("kvm", "tcg"):
        return forced, f"ROCE_NET_VM_ACCEL={forced}"
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError as e:
        return "tcg", f"cannot read /proc/cpuinfo ({e})"
    hw = re.search(r"^flags\s*:.*\b(vmx|svm)\b", flags, re.M) is not None
    if not hw:
        return "tcg", "the CPU shows no vmx/svm (no hardware virtualisation here)"
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
        os.close(fd)
    except OSError as e:
        return "tcg", f"/dev/kvm cannot be opened ({e.strerror})"
    return "kvm", "the CPU has hardware virtualisation and /dev/kvm opens"


def image(release: str) -> Path:
    """The cached image directory of RELEASE, built first when the recipe changed."""
    out = subprocess.run(
        [str(REPO / "scripts/vm/image.sh"), release],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise VmError(f"building the {release} guest image failed (exit {out.returncode}; see above)")
    return Path(out.stdout.strip().splitlines()[-1])


def ns_run(ns: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", ns, *args], text=True, capture_output=True, check=check
    )


@dataclass
class Result:
    """What a command in a guest did."""

    cmd: str
    rc: int
    out: str
    err: str

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def text(self) -> str:
        return (self.out + self.err).strip()


class Agent:
    """A qemu-guest-agent connection (one client at a time, as QGA allows)."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name
        self.sock: Optional[socket.socket] = None
        self.buf = b""
        self.sync_id = 0

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.buf = b""

    def _connect(self, timeout: float) -> None:
        self.close()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(str(self.path))
        self.sock = s
        # guest-sync-delimited: the agent answers after a 0xff byte, which
        # flushes anything a previous client left half-read.
        self.sync_id = (self.sync_id + 1) % 1_000_000 + int(time.time()) % 1000 * 1_000_000
        s.sendall(b"\xff" + json.dumps({"execute": "guest-sync-delimited", "arguments": {"id": self.sync_id}}).encode())
        while True:
            msg = self._read(timeout)
            if msg.get("return") == self.sync_id:
                return

    def _read(self, timeout: float) -> dict:
        assert self.sock is not None
        deadline = time.monotonic() + timeout
        while True:
            self.buf = self.buf.lstrip(b"\xff")
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line, self.buf = self.buf[:nl], self.buf[nl + 1 :]
                if line.strip():
                    return json.loads(line)
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.name}: the guest agent did not answer in {timeout:.0f} s")
            self.sock.settimeout(left)
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError(f"{self.name}: the guest agent closed the connection")
            self.buf += chunk

    def call(self, execute: str, arguments: Optional[dict] = None, timeout: float = 30) -> object:
        req: dict = {"execute": execute}
        if arguments is not None:
            req["arguments"] = arguments
        for attempt in (0, 1):
            try:
                if self.sock is None:
                    self._connect(timeout)
                assert self.sock is not None
                self.sock.sendall(json.dumps(req).encode() + b"\n")
                msg = self._read(timeout)
                break
            except (OSError, TimeoutError, ConnectionError, json.JSONDecodeError):
                self.close()
                if attempt == 1:
                    raise
        if "error" in msg:
            raise VmError(f"{self.name}: guest agent {execute}: {msg['error'].get('desc', msg['error'])}")
        return msg.get("return")


@dataclass
class Nic:
    """One virtio NIC of a guest: its MAC, the tap it is plugged into and that
    tap's bridge in the bed's namespace."""

    mac: str
    tap: str
    bridge: str = "br0"


@dataclass
class Guest:
    """One qemu guest on the bed's bridge."""

    name: str
    bed: "Bed"
    nics: list[Nic]
    memory_mb: int = 512
    proc: Optional[subprocess.Popen[bytes]] = None
    agent: Optional[Agent] = None
    booted_in: float = 0.0
    boots: int = 0
    t_start: float = 0.0
    qmp_path: Path = Path()
    ssh_ip: str = ""
    # The image this guest boots (its release); the bed's own when not set.
    image: Optional[Path] = None

    @property
    def disk_image(self) -> Path:
        return self.image or self.bed.image

    @property
    def dir(self) -> Path:
        return self.bed.tmp / self.name

    @property
    def console(self) -> Path:
        return self.dir / "console.log"

    def start(self) -> None:
        d = self.dir
        d.mkdir(exist_ok=True)
        overlay = d / "disk.qcow2"
        if not overlay.exists():
            subprocess.run(
                ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", str(self.disk_image / "base.qcow2"), str(overlay)],
                check=True,
            )
        qga = d / "qga.sock"
        self.qmp_path = d / "qmp.sock"
        accel_args = ["-accel", "kvm", "-cpu", "host"] if self.bed.accel == "kvm" else ["-accel", "tcg", "-cpu", "max"]
        cmd = [
            "qemu-system-x86_64", *accel_args,
            "-machine", "q35", "-m", str(self.memory_mb), "-smp", "1",
            "-nodefaults", "-display", "none", "-no-user-config",
            "-kernel", str(self.disk_image / "vmlinuz"),
            "-initrd", str(self.disk_image / "initrd.img"),
            "-append", "root=/dev/vda rw console=ttyS0 net.ifnames=0 quiet loglevel=4 systemd.show_status=0",
            "-drive", f"file={overlay},if=virtio,format=qcow2,cache=unsafe",
            "-serial", f"file:{self.console}",
            "-chardev", f"socket,path={qga},server=on,wait=off,id=qga0",
            "-device", "virtio-serial",
            "-device", "virtserialport,chardev=qga0,name=org.qemu.guest_agent.0",
            "-virtfs", f"local,path={self.bed.share},mount_tag=rnshare,security_model=none,readonly=on",
            # A writable directory every guest shares, when the bed has one
            # (`Bed.scratch`): the shared file system of a cluster's job.
            *(["-virtfs", f"local,path={self.bed.scratch_dir},mount_tag={SCRATCH_TAG},security_model=none"] if self.bed.scratch else []),
            # The monitor: the harness pulls a NIC's cable (`set_link`) there.
            "-qmp", f"unix:{self.qmp_path},server=on,wait=off",
        ]
        for i, nic in enumerate(self.nics):
            cmd += [
                "-netdev", f"tap,id=n{i},ifname={nic.tap},script=no,downscript=no",
                "-device", f"virtio-net-pci,netdev=n{i},mac={nic.mac}",
            ]
        with open(d / "qemu.log", "ab") as qlog:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", self.bed.ns, *cmd],
                stdin=subprocess.DEVNULL,
                stdout=qlog,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.bed.pids.append(self.proc.pid)
        self.agent = Agent(qga, self.name)
        self.t_start = time.monotonic()

    def wait_ready(self, timeout: float) -> None:
        """Wait until the guest agent answers and systemd has finished booting."""
        assert self.agent is not None
        deadline = time.monotonic() + timeout
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise VmError(f"{self.name}: qemu exited with {self.proc.returncode}: {self.tail()}")
            try:
                self.agent.call("guest-ping", timeout=5)
                # The share's mount can race the 9p transport module at boot
                # (kernel 5.10: "9pnet: Could not find request transport:
                # virtio"): mounted again once the system is up.
                r = self.sh(
                    "systemctl is-system-running --wait >/dev/null 2>&1; "
                    "mountpoint -q /mnt/roce-net || mount /mnt/roce-net; "
                    "mountpoint -q /mnt/roce-net && echo ok",
                    timeout=120,
                )
                if "ok" in r.out:
                    break
            except (OSError, TimeoutError, ConnectionError, VmError):
                pass
            if time.monotonic() > deadline:
                raise VmError(f"{self.name}: not ready {timeout:.0f} s after qemu started: {self.tail()}")
            time.sleep(2)
        self.booted_in = time.monotonic() - self.t_start
        self.boots += 1

    def boot_id(self, timeout: float = 10) -> str:
        """This boot's id (a new one after every reboot)."""
        return self.ok("cat /proc/sys/kernel/random/boot_id", timeout).strip()

    def reboot(self, timeout: float = 420) -> float:
        """Reboot the guest as its admin would (`systemctl reboot`) and wait
        until the new boot is ready; the seconds it took. qemu resets the
        machine and boots the same kernel from the same disk overlay."""
        assert self.agent is not None
        t0 = time.monotonic()
        old = self.boot_id()
        try:
            self.spawn("sleep 1; systemctl reboot")
        except (OSError, TimeoutError, ConnectionError, VmError):
            pass
        self.agent.close()
        deadline = t0 + timeout
        while True:
            try:
                if self.boot_id(timeout=5) != old:
                    break
            except (OSError, TimeoutError, ConnectionError, VmError):
                self.agent.close()
            if time.monotonic() > deadline:
                raise VmError(f"{self.name}: no new boot {timeout:.0f} s after `systemctl reboot`: {self.tail()}")
            time.sleep(2)
        self.t_start = t0
        self.wait_ready(max(30.0, deadline - time.monotonic()))
        log(f"{self.name}: rebooted in {self.booted_in:.0f} s")
        return self.booted_in

    def qmp(self, execute: str, arguments: Optional[dict] = None, timeout: float = 10) -> object:
        """One command on qemu's monitor (QMP)."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(str(self.qmp_path))
            f = s.makefile("rwb")

            def reply() -> dict:
                while True:
                    line = f.readline(1 << 20)
                    if not line:
                        raise VmError(f"{self.name}: qemu's monitor closed the connection")
                    msg = json.loads(line)
                    if "event" in msg or "QMP" in msg:
                        continue
                    return msg

            f.readline(1 << 20)  # the greeting
            for req in ({"execute": "qmp_capabilities"}, {"execute": execute, **({"arguments": arguments} if arguments else {})}):
                f.write(json.dumps(req).encode() + b"\n")
                f.flush()
                msg = reply()
                if "error" in msg:
                    raise VmError(f"{self.name}: qemu monitor {req['execute']}: {msg['error'].get('desc', msg['error'])}")
            return msg.get("return")
        finally:
            s.close()

    def set_link(self, nic: int, up: bool) -> None:
        """Plug (up) or pull (down) the cable of NIC number NIC (ethNIC in the guest)."""
        self.qmp("set_link", {"name": f"n{nic}", "up": up})

    def ssh_setup(self, ip: str) -> None:
        """Let the harness in over SSH at IP (root, the bed's key), pinning
        the guest's host key: what `Bed.ssh` and Ansible use."""
        key = self.bed.ssh_key()
        pub = key.with_name(key.name + ".pub").read_text().strip()
        self.ok(
            "install -d -m 700 /root/.ssh && "
            f"printf '%s\\n' '{pub}' >/root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys && "
            "systemctl is-active --quiet ssh"
        )
        host = self.ok("cat /etc/ssh/ssh_host_ed25519_key.pub").split()[:2]
        with open(key.parent / "known_hosts", "a") as kh:
            kh.write(f"{ip} {host[0]} {host[1]}\n")
        self.ssh_ip = ip

    def tail(self, n: int = 15) -> str:
        parts = []
        for f in (self.dir / "qemu.log", self.console):
            try:
                lines = f.read_text(errors="replace").splitlines()[-n:]
            except OSError:
                continue
            parts.append(f"--- {f.name} ---\n" + "\n".join(lines))
        return "\n" + "\n".join(parts)

    def spawn(self, cmd: str) -> int:
        """Start CMD (sh -c) in the guest; its pid for `wait`."""
        assert self.agent is not None
        ret = self.agent.call(
            "guest-exec",
            {"path": "/bin/sh", "arg": ["-c", cmd], "capture-output": True},
        )
        assert isinstance(ret, dict)
        return int(ret["pid"])

    def wait(self, pid: int, cmd: str, timeout: float) -> Result:
        assert self.agent is not None
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            st = self.agent.call("guest-exec-status", {"pid": pid})
            assert isinstance(st, dict)
            if st.get("exited"):
                out = base64.b64decode(st.get("out-data", "")).decode(errors="replace")
                err = base64.b64decode(st.get("err-data", "")).decode(errors="replace")
                rc = st.get("exitcode", 128 + int(st.get("signal", 0)))
                return Result(cmd, int(rc), out, err)
            if time.monotonic() > deadline:
                raise VmError(f"{self.name}: `{cmd}` still running after {timeout:.0f} s")
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def sh(self, cmd: str, timeout: float = 120) -> Result:
        """Run CMD (sh -c) in the guest and wait for it."""
        return self.wait(self.spawn(cmd), cmd, timeout)

    def ok(self, cmd: str, timeout: float = 120) -> str:
        """Run CMD; its stdout, or VmError naming the guest, the command and its output."""
        r = self.sh(cmd, timeout)
        if not r.ok:
            raise VmError(f"{self.name}: `{cmd}` exited {r.rc}: {r.text()[-2000:]}")
        return r.out

    def stop(self) -> None:
        if self.agent is not None:
            self.agent.close()
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(10)


class _Interrupted(BaseException):
    pass


def _raise_on_signal(signum: int, _frame: object) -> None:
    raise _Interrupted(f"signal {signal.Signals(signum).name}")


@dataclass
class Bed:
    """A lab namespace with a bridge, and the guests plugged into it."""

    release: str = "bookworm"
    share_files: dict[str, Path] = field(default_factory=dict)
    #: Also share a writable directory (`scratch_dir`) into every guest, tag
    #: SCRATCH_TAG (`mount_scratch` mounts it), as a cluster's shared file system.
    scratch: bool = False
    ns: str = ""
    tmp: Path = Path()
    share: Path = Path()
    image: Path = Path()
    accel: str = "tcg"
    accel_why: str = ""
    guests: list[Guest] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    taps: int = 0

    def __enter__(self) -> "Bed":
        self._old = {s: signal.signal(s, _raise_on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
        try:
            self._open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self) -> None:
        for tool in ("qemu-system-x86_64", "qemu-img", "ip"):
            if shutil.which(tool) is None:
                raise VmError(f"{tool} not found: scripts/vm/install-deps.sh installs what the VM tier needs")
        if os.geteuid() != 0:
            raise VmError("the VM test bed needs root (a lab namespace with taps, debootstrap)")
        self.accel, self.accel_why = accel()
        log(f"accelerator: {self.accel} ({self.accel_why})")
        self.image = image(self.release)
        self.tmp = Path(tempfile.mkdtemp(prefix="rnt-vm-"))
        self.share = self.tmp / "share"
        self.share.mkdir()
        for name, src in self.share_files.items():
            dst = self.share / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
        self.share.chmod(0o755)
        if self.scratch:
            self.scratch_dir.mkdir()
        # One process may hold several beds at once (the test session's
        # seed guests while a module boots its own): each its own namespace.
        Bed._opened += 1
        self.ns = f"rnt-vm-{os.getpid()}-{Bed._opened}"
        subprocess.run(["ip", "netns", "add", self.ns], check=True)
        ns_run(self.ns, "ip", "link", "add", "br0", "type", "bridge", "forward_delay", "0")
        ns_run(self.ns, "ip", "link", "set", "br0", "up")
        ns_run(self.ns, "ip", "link", "set", "lo", "up")

    @property
    def scratch_dir(self) -> Path:
        """The writable directory shared into every guest (`scratch`)."""
        return self.tmp / "scratch"

    def ssh_key(self) -> Path:
        """The harness's SSH key (made once per bed, in its directory)."""
        key = self.tmp / "ssh" / "id_ed25519"
        if not key.exists():
            key.parent.mkdir(mode=0o700, exist_ok=True)
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rnt-vm", "-f", str(key)], check=True)
        return key

    def ssh_argv(self, ip: str, alive: int = 2) -> list[str]:
        """`ssh` to root@IP from the bed's namespace, with nothing of the
        machine's own SSH configuration; a dead session is noticed after
        3 × ALIVE seconds."""
        key = self.ssh_key()
        return [
            "ip", "netns", "exec", self.ns, "ssh", "-F", "/dev/null", "-i", str(key),
            "-o", f"UserKnownHostsFile={key.parent / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
            "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
            "-o", f"ServerAliveInterval={alive}", "-o", "ServerAliveCountMax=3",
            f"root@{ip}",
        ]

    def ssh(self, ip: str, cmd: str, timeout: float = 120) -> Result:
        """Run CMD on root@IP over SSH (the remote shell runs it)."""
        try:
            r = subprocess.run([*self.ssh_argv(ip), cmd], text=True, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            return Result(cmd, 124, str(e.stdout or ""), str(e.stderr or "") + f"\n(ssh still running after {timeout:.0f} s)")
        return Result(cmd, r.returncode, r.stdout, r.stderr)

    def bridge(self, name: str, address: Optional[str] = None) -> None:
        """Another bridge in the bed's namespace (e.g. a management network),
        with ADDRESS (CIDR) for the harness's own end of it (ssh, Ansible)."""
        ns_run(self.ns, "ip", "link", "add", name, "type", "bridge", "forward_delay", "0")
        if address:
            ns_run(self.ns, "ip", "addr", "add", address, "dev", name)
        ns_run(self.ns, "ip", "link", "set", name, "up")

    def guest(
        self,
        name: str,
        macs: Sequence[str],
        memory_mb: int = 512,
        bridges: Optional[Sequence[str]] = None,
        release: Optional[str] = None,
    ) -> Guest:
        """A guest with one NIC per MAC (eth0, eth1, ... in this order), each
        on br0 or on the bridge BRIDGES names for it; booting RELEASE's image
        (built when missing) instead of the bed's, for a fleet of generations."""
        nics = []
        for i, mac in enumerate(macs):
            tap = f"t{self.taps}"
            self.taps += 1
            bridge = bridges[i] if bridges else "br0"
            ns_run(self.ns, "ip", "tuntap", "add", "dev", tap, "mode", "tap")
            ns_run(self.ns, "ip", "link", "set", tap, "master", bridge, "up")
            nics.append(Nic(mac, tap, bridge))
        g = Guest(name, self, nics, memory_mb)
        if release is not None and release != self.release:
            g.image = image(release)
        self.guests.append(g)
        return g

    def boot(self, timeout: float = 420) -> None:
        """Start every guest not running and wait until all are ready (they boot in parallel)."""
        t0 = time.monotonic()
        for g in self.guests:
            if g.proc is None or g.proc.poll() is not None:
                g.start()
        for g in self.guests:
            g.wait_ready(timeout - (time.monotonic() - t0))
        log(
            f"{len(self.guests)} guests ready in {time.monotonic() - t0:.0f} s ({self.accel}): "
            + ", ".join(f"{g.name} {g.booted_in:.0f} s" for g in self.guests)
        )

    keep: bool = False
    _opened = 0

    def save(self) -> Path:
        """Write what `attach` needs to drive these guests from another process."""
        path = self.tmp / "bed.json"
        path.write_text(
            json.dumps(
                {
                    "ns": self.ns,
                    # Which namespace of that name: `remove` deletes no other.
                    "ns_inode": _netns_inode(f"/run/netns/{self.ns}"),
                    "tmp": str(self.tmp),
                    "image": str(self.image),
                    "accel": self.accel,
                    "guests": [
                        {
                            "name": g.name,
                            "pid": g.proc.pid if g.proc else None,
                            "macs": [n.mac for n in g.nics],
                            "image": str(g.disk_image),
                        }
                        for g in self.guests
                    ],
                }
            )
        )
        return path

    def close(self) -> None:
        if self.keep:
            log(f"kept: namespace {self.ns}, guests in {self.tmp}; `scripts/vm-lab.sh --remove {self.tmp}` removes them")
            return
        errors = []
        for g in self.guests:
            try:
                g.stop()
            except Exception as e:  # noqa: BLE001 - every guest gets its stop
                errors.append(f"{g.name}: {e}")
        if self.ns:
            r = subprocess.run(["ip", "netns", "del", self.ns], capture_output=True, text=True)
            if r.returncode != 0 and "No such file" not in r.stderr:
                errors.append(f"ip netns del {self.ns}: {r.stderr.strip()}")
        if self.tmp != Path() and self.tmp.exists():
            shutil.rmtree(self.tmp, ignore_errors=True)
        for s, h in getattr(self, "_old", {}).items():
            signal.signal(s, h)
        self._old = {}
        if errors:
            raise VmError("cleaning up the VM test bed: " + "; ".join(errors))


def roce_net_binary() -> Path:
    """The roce-net CLI the guests run: ROCE_NET_VM_BIN, else the portable
    artifact from scripts/build-artifacts.sh (the shipped binary, built with
    `verbs`), else a local `--features verbs` build."""
    env = os.environ.get("ROCE_NET_VM_BIN")
    if env:
        return Path(env)
    dist = sorted((REPO / "dist").glob("roce-net-*-x86_64-linux-gnu"))
    if dist:
        return dist[-1]
    for p in (REPO / "target/release/roce-net", REPO / "target/debug/roce-net"):
        if p.exists():
            return p
    raise VmError(
        "no roce-net binary for the guests: run scripts/build-artifacts.sh cli "
        "(or cargo build --features verbs) first, or set ROCE_NET_VM_BIN"
    )




def attach(tmp: Path) -> dict[str, Guest]:
    """The guests of a kept bed (`Bed.keep`), to drive from another process."""
    st = json.loads((tmp / "bed.json").read_text())
    bed = Bed(ns=st["ns"], tmp=Path(st["tmp"]), image=Path(st["image"]), accel=st["accel"])
    out = {}
    for g in st["guests"]:
        guest = Guest(g["name"], bed, [Nic(m, "") for m in g["macs"]])
        guest.image = Path(g["image"]) if g.get("image") else None
        guest.agent = Agent(bed.tmp / g["name"] / "qga.sock", g["name"])
        guest.qmp_path = bed.tmp / g["name"] / "qmp.sock"
        out[g["name"]] = guest
    return out


def _is_our_qemu(pid: int, tmp: str) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes()[: 1 << 16].split(b"\0")
    except OSError:
        return False
    return any(b"qemu-system" in a for a in argv) and any(tmp.encode() in a for a in argv)


#: A bed's namespace name (`Bed._open`): nothing else is ever deleted by `remove`.
BED_NS = re.compile(r"^rnt-vm-[0-9]+-[0-9]+$")


def _netns_inode(path: str) -> Optional[int]:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def remove(given: Path) -> None:
    """Stop a kept bed's guests (by the pids it recorded) and remove its
    namespace and files. GIVEN may be relative or reached through a link: it is
    resolved first, and the bed.json found there must name that very directory
    (one `Bed` made: `rnt-vm-*`, this user's) and a bed's namespace
    (`rnt-vm-<pid>-<n>`, the very one the bed made when bed.json recorded its
    inode); otherwise nothing is touched. A recorded pid counts only while it is
    still this bed's qemu (its command line names the bed's real directory);
    each is waited for, and killed after 20 s, before its namespace and disk go."""
    tmp = given.resolve(strict=True)
    state = tmp / "bed.json"
    st = json.loads(state.read_text())
    recorded = Path(str(st.get("tmp", "")))
    if recorded.resolve() != tmp or not tmp.name.startswith("rnt-vm-") or tmp.stat().st_uid != os.geteuid():
        raise VmError(
            f"{state} says its bed is {recorded}, not {tmp} (a bed's directory is an rnt-vm-* "
            "directory of this user): nothing removed"
        )
    ns = str(st.get("ns", ""))
    if not BED_NS.match(ns):
        raise VmError(f"{state} names namespace {ns!r}, not a bed's (rnt-vm-<pid>-<n>): nothing removed")
    have_ns = _netns_inode(f"/run/netns/{ns}")
    if st.get("ns_inode") is not None and have_ns is not None and have_ns != st["ns_inode"]:
        raise VmError(f"namespace {ns} is not the one the bed in {tmp} made (another of that name): nothing removed")
    pids = [int(g["pid"]) for g in st.get("guests", []) if g.get("pid") and _is_our_qemu(int(g["pid"]), str(tmp))]
    # A running guest of this bed is in the bed's namespace (its taps are there):
    # if one is elsewhere, the recorded namespace is not this bed's.
    want = _netns_inode(f"/run/netns/{ns}")
    for pid in pids:
        have = _netns_inode(f"/proc/{pid}/ns/net")
        if want is not None and have is not None and have != want:
            raise VmError(f"guest pid {pid} of {tmp} runs outside namespace {ns} that {state} names: nothing removed")
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 20
    while any(_is_our_qemu(p, str(tmp)) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in pids:
        if _is_our_qemu(pid, str(tmp)):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    if want is not None:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    shutil.rmtree(tmp, ignore_errors=True)
