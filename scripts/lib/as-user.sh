# shellcheck shell=bash
# Sourced by scripts/lab.sh and scripts/test.sh: build as the user, run as root.
#
# Rust is usually installed per user (rustup puts cargo in ~/.cargo/bin), so
# `sudo cargo ...` finds no cargo, and a root build would leave root-owned files
# in the user's target/ and ~/.cargo. So builds run as the user who invoked the
# script (the one behind sudo, when run through sudo) and only what needs root
# (creating network namespaces) runs as root.

# The user who builds: the caller, or the user behind sudo.
builder_user() {
  if [ "$(id -u)" = 0 ] && [ -n "${SUDO_USER:-}" ] && [ "${SUDO_USER}" != root ]; then
    echo "$SUDO_USER"
  else
    id -un
  fi
}

# PATH for the builder: theirs, plus their ~/.cargo/bin (rustup's default).
builder_path() {
  if [ "$(builder_user)" = "$(id -un)" ]; then
    echo "$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"
  else
    local home
    home=$(getent passwd "$(builder_user)" | cut -d: -f6)
    echo "$home/.cargo/bin:/usr/local/bin:/usr/bin:/bin"
  fi
}

# build_as_user CMD...: run CMD as the builder, with cargo findable.
build_as_user() {
  local user path
  user=$(builder_user)
  path=$(builder_path)
  if ! PATH="$path" command -v cargo >/dev/null; then
    echo "$(basename "$0"): no cargo for user $user (looked in PATH and ~$user/.cargo/bin):" \
      "install Rust with rustup as $user, then run this again" >&2
    exit 1
  fi
  if [ "$user" = "$(id -un)" ]; then
    PATH="$path" "$@"
  else
    # Root through sudo: build as the user behind it, with the few settings
    # that change what gets built passed along.
    local envs=("PATH=$path")
    local v
    for v in CARGO_TARGET_DIR CARGO_BUILD_JOBS SKIP_PIP SKIP_INSTALL SKIP_PYTHON SKIP_AARCH64 \
      ROCE_NET_DEBIAN_MIRROR ROCE_NET_AARCH64_SUITE CI; do
      [ -n "${!v:-}" ] && envs+=("$v=${!v}")
    done
    sudo -u "$user" -H env "${envs[@]}" "$@"
  fi
}

# run_as_root CMD...: run CMD as root: directly when root already, through sudo
# when it is there (passing the variables named in $ROOT_ENV), else print the
# exact command to run as root and exit 77 (EX_NOPERM).
run_as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
    return
  fi
  local envs=() v
  for v in ${ROOT_ENV:-}; do
    [ -n "${!v:-}" ] && envs+=("$v=${!v}")
  done
  local shown
  shown=$(printf '%q ' ${envs[@]+"${envs[@]}"} "$@")
  if command -v sudo >/dev/null; then
    echo "==> as root (sudo): $shown" >&2
    if [ ${#envs[@]} -gt 0 ]; then
      sudo env "${envs[@]}" "$@"
    else
      sudo "$@"
    fi
    return
  fi
  echo "$(basename "$0"): built; the next step needs root (it creates network namespaces)" \
    "and there is no sudo here. Run it as root, e.g. su -c '...' or from a root shell:" >&2
  echo "    $shown" >&2
  exit 77
}

# exec_as_root CMD...: as run_as_root, but the script becomes CMD (exec), or
# sudo running it: a signal sent to the script's pid (a CI timeout's SIGTERM,
# a dropped session's SIGHUP) then reaches CMD (sudo relays it), instead of
# ending the script and leaving CMD running without it.
exec_as_root() {
  if [ "$(id -u)" = 0 ]; then
    exec "$@"
  fi
  if command -v sudo >/dev/null && [ -z "${ROOT_ENV:-}" ]; then
    echo "==> as root (sudo): $(printf '%q ' "$@")" >&2
    exec sudo "$@"
  fi
  run_as_root "$@"
}

# The absolute target directory cargo builds into.
target_dir() {
  local t=${CARGO_TARGET_DIR:-target}
  case "$t" in
    /*) echo "$t" ;;
    *) echo "$PWD/$t" ;;
  esac
}
