"""Offline stand-in for the get-pip.py bootstrap script ansible-test downloads.

ansible-test (ansible_test/_util/target/setup/requirements.py, bootstrap())
creates each sanity test's virtual environment without pip, then runs
`python quiet_pip.py --disable-pip-version-check pip==X [--no-setuptools]
[--no-wheel]` with GET_PIP pointing at ~/.ansible/test/cache/get_pip_X.py, which
it downloads from a host these machines cannot reach unless that file exists.
scripts/ansible-test.sh copies this file there: it bootstraps pip from the
interpreter's own ensurepip (no network), then installs the requested packages
(pip==X) from the package index pip is configured for, as get-pip.py would.
"""

import subprocess
import sys

# get-pip.py's own options; pip install does not know them.
GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}


def main():
    args = [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
    # In a child: ensurepip.bootstrap() sets PIP_CONFIG_FILE=/dev/null in the
    # environment of the process that calls it, which would hide the node's
    # pip configuration (index, certificates) from the install below.
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
    packages = [a for a in args if not a.startswith("-")]
    if packages:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q"] + args)


if __name__ == "__main__":
    main()
