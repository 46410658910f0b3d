# -*- coding: utf-8 -*-
# Copyright: (c) 2025, roce-net maintainers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0.txt)
"""Shared helpers of the roce_net modules: importing the roce_net package,
building a Host from module options, and turning errors into fail_json data."""

from __future__ import absolute_import, annotations, division, print_function

import traceback

try:
    import roce_net
except ImportError:  # exercised on nodes without the wheel (tests hide it)
    roce_net = None
    IMPORT_ERROR = traceback.format_exc()
else:
    IMPORT_ERROR = None

from ansible.module_utils.basic import missing_required_lib

#: The options every module that reads a host takes.
HOST_ARGS = dict(
    netns=dict(type="str"),
    sysfs_root=dict(type="path"),
    etc_root=dict(type="path"),
)


def require_roce_net(module, *calls):
    """Fail the module unless roce_net imports and has every dotted name in ``calls``.

    Returns the roce_net package."""
    if roce_net is None:
        module.fail_json(msg=missing_required_lib("roce_net"), exception=IMPORT_ERROR)
    missing = []
    for call in calls:
        obj = roce_net
        for part in call.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                missing.append(call)
                break
    if missing:
        module.fail_json(
            msg="this roce_net (%s) lacks %s; install a newer wheel"
            % (getattr(roce_net, "__version__", "unknown version"), ", ".join(missing))
        )
    return roce_net


#: The largest value of each unsigned integer type the binding's parameters
#: take (roce-net-py/src/rdma.rs and host.rs: u16, u32, usize on 64 bits).
U16_MAX = (1 << 16) - 1
U32_MAX = (1 << 32) - 1
USIZE_MAX = (1 << 64) - 1


def check_int_ranges(module, params, limits):
    """Fail the module, naming the option, when an integer option is outside
    ``limits`` (option -> (lowest, highest or None)). The binding takes fixed-width
    integers: a Python int beyond one (``size: 2**70``) would fail inside it
    as an OverflowError that names no option."""
    for name, (low, high) in limits.items():
        value = params.get(name)
        if value is None:
            continue
        if value < low:
            module.fail_json(msg="%s %d: must be at least %d" % (name, value, low))
        if high is not None and value > high:
            module.fail_json(msg="%s %d: must be at most %d (the largest the roce_net library takes)"
                             % (name, value, high))


def host_from_params(params):
    """A roce_net.Host for the module's netns / sysfs_root / etc_root options."""
    return roce_net.Host(
        netns=params.get("netns"),
        sysfs_root=params.get("sysfs_root"),
        etc_root=params.get("etc_root"),
    )


def error_result(err, **extra):
    """A roce_net.RoceNetError as fail_json arguments: the message, the error
    kind, the errno and the kernel's extended-ack text."""
    result = dict(
        msg=str(err),
        kind=getattr(err, "kind", None),
        errno=getattr(err, "errno", None),
        extack=getattr(err, "extack", None),
    )
    result.update(extra)
    return result
