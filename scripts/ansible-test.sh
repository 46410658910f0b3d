#!/usr/bin/env bash
# ansible-test on the roce_net.roce collection (ansible_collections/roce_net/roce),
# offline: sanity (every test that has targets here) and units.
#
# ansible-test gives each sanity test its own venv and bootstraps pip into it
# with a get-pip script it downloads from a host these machines cannot reach,
# unless ~/.ansible/test/cache/get_pip_<version>.py exists. This script runs
# ansible-test with HOME pointing at its own directory (the user's own
# ~/.ansible is never touched; default ~/.cache/roce-net/ansible-test-home, so
# the per-test venvs, keyed by ansible-test on their pinned requirements, are
# reused by the next run on the same machine) and puts
# scripts/ansible-test-get-pip.py there under that name: it bootstraps pip with
# the interpreter's ensurepip and installs the requested pip version from the
# package index, as get-pip.py would; ansible-test then installs each test's
# pinned requirements with it.
#
# Usage: scripts/ansible-test.sh [sanity|units|all]   (default all)
# Env:   PY (default .venv/bin/python, with ansible-core and roce_net installed)
#        ROCE_NET_ANSIBLE_TEST_HOME (default ~/.cache/roce-net/ansible-test-home)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
PY=${PY:-$root/.venv/bin/python}
AT="$(dirname "$PY")/ansible-test"
what=${1:-all}

log() { printf '\n==> %s\n' "$*"; }

pip_version=$("$PY" - <<'PYEOF'
import os, re, ansible_test
src = open(os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")).read()
m = re.search(r"pip='([0-9.]+)'", src)
if not m:
    raise SystemExit("cannot find the pip version ansible-test bootstraps (ansible_test/_internal/python_requirements.py)")
print(m.group(1))
PYEOF
)
home=${ROCE_NET_ANSIBLE_TEST_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/roce-net/ansible-test-home}
mkdir -p "$home/.ansible/test/cache"
cp scripts/ansible-test-get-pip.py "$home/.ansible/test/cache/get_pip_${pip_version//./_}.py"
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

cd ansible_collections/roce_net/roce
if [ "$what" = sanity ] || [ "$what" = all ]; then
  log "ansible-test sanity --python $pyver (pip $pip_version bootstrapped offline)"
  start=$SECONDS
  HOME=$home "$AT" sanity --python "$pyver" --color no -v
  echo "ansible-test sanity took $((SECONDS - start)) s"
fi
if [ "$what" = units ] || [ "$what" = all ]; then
  log "ansible-test units --local (the venv that has roce_net)"
  HOME=$home "$AT" units --local --python-interpreter "$PY" --color no
fi
