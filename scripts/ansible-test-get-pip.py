"""Offline stand-in for the get-pip.py bootstrap script ansible-test downloads.

ansible-test (ansible_test/_util/target/setup/requirements.py, bootstrap())
creates each sanity test's virtual environment without pip, then runs
`python quiet_pip.py --disable-pip-version-check pip==X [--no-setuptools]
[--no-wheel]` with GET_PIP pointing at ~/.ansible/test/cache/get_pip_X.py, which
it downloads from a host these machines cannot reach unless that file exists.
scripts/ansible-test.sh puts this file there. Like get-pip.py (which carries a
zipped pip and runs it to install the requested one), it runs a pip that needs
no installation - the wheel the interpreter's ensurepip carries, run from the
wheel file - to install the requested packages (pip==X) from the package index
pip is configured for. Without such a wheel it falls back to
`python -m ensurepip` and the installed pip.
"""

import glob
import os
import subprocess
import sys

# get-pip.py's own options: it installs setuptools and wheel unless told not
# to; this stand-in never does, and pip install does not know the options.
GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}


def bundled_pip():
    """The pip wheel ensurepip would install (CPython's bundled one, or
    Debian's /usr/share/python-wheels), or None."""
    try:
        import ensurepip
    except ImportError:
        return None
    dirs = [os.path.join(os.path.dirname(ensurepip.__file__), "_bundled"), "/usr/share/python-wheels"]
    for d in dirs:
        found = sorted(glob.glob(os.path.join(d, "pip-*.whl")))
        if found:
            return found[-1]
    return None


def main():
    args = [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
    wheel = bundled_pip()
    if wheel:
        # A wheel is a zip with pip/__main__.py: `python pip.whl/pip install ...`.
        pip = [sys.executable, os.path.join(wheel, "pip")]
    else:
        # In a child: ensurepip.bootstrap() sets PIP_CONFIG_FILE=/dev/null in the
        # environment of the process that calls it, which would hide the node's
        # pip configuration (index, certificates) from the install below.
        subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
        pip = [sys.executable, "-m", "pip"]
    subprocess.check_call(pip + ["install", "-q"] + args)


if __name__ == "__main__":
    main()
