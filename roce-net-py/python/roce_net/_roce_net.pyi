# Hand-written stub of the native module. Checked against the built module by
# `python -m mypy.stubtest roce_net` (scripts/test-python.sh): keep in step.
import os
import pathlib
from typing import Any, Dict, Optional, Type, Union, final

from ._types import HostState, Plan

__all__ = [
    "__version__",
    "SCHEMA_VERSION",
    "_register",
    "NativeState",
    "NativePlan",
    "Host",
    "_from_json",
    "load_snapshot",
    "parse_snapshot",
    "save_snapshot",
]

__version__: str
SCHEMA_VERSION: int

_Path = Union[str, os.PathLike[str]]

def _register(classes: Dict[str, Any], errors: Dict[str, Any], base_error: Type[BaseException]) -> None: ...
def _from_json(type_name: str, text: str) -> Any: ...
def load_snapshot(path: _Path) -> HostState:
    """Read a snapshot JSON file (``roce-net snapshot --json``). Raises ParseError / NotFoundError."""
def save_snapshot(state: HostState, path: _Path) -> None:
    """Write a snapshot as the library's JSON (readable by ``load_snapshot`` and the CLI)."""
def parse_snapshot(text: str) -> HostState:
    """Parse snapshot JSON text. Raises ParseError."""

@final
class NativeState:
    def to_json(self, pretty: bool = True) -> str: ...

@final
class NativePlan:
    def to_json(self) -> str: ...

@final
class Host:
    """A handle on one host's networking, scoped to a network namespace.

    ``Host()`` is the caller's namespace; ``Host(netns="name")`` a named one
    (``/run/netns/name``, NotFoundError if missing); ``netns_path=`` any namespace
    file. ``sysfs_root`` / ``etc_root`` redirect where RDMA devices and routing
    table names are read from (fixtures, containers).
    """

    def __new__(
        cls,
        netns: Optional[str] = None,
        sysfs_root: Optional[_Path] = None,
        *,
        netns_path: Optional[_Path] = None,
        etc_root: Optional[_Path] = None,
    ) -> Host: ...
    @property
    def netns(self) -> Optional[str]: ...
    @property
    def netns_path(self) -> Optional[pathlib.Path]: ...
    @property
    def sysfs_root(self) -> pathlib.Path: ...
    @property
    def etc_root(self) -> pathlib.Path: ...
    def snapshot(self) -> HostState:
        """Capture links, addresses, neighbours, routes, rules, sysctls and RDMA devices."""
