#!/usr/bin/env bash
# Prepares the container platform without any registry: podman with runc,
# and a minimal local Debian image built with mmdebstrap + podman import.
# A normal user builds the image in their own podman store: mmdebstrap's
# unshare mode needs no root (only the packages below, installed once).
#
# usage: scripts/setup/container.sh [IMAGE]   (default localhost/perfsnake-bookworm:latest)
# Idempotent: an existing image is kept (PERFSNAKE_REBUILD_IMAGE=1 rebuilds).
set -euo pipefail

IMAGE=${1:-localhost/perfsnake-bookworm:latest}
SUITE=${PERFSNAKE_IMAGE_SUITE:-bookworm}
MIRROR=${PERFSNAKE_IMAGE_MIRROR:-http://deb.debian.org/debian}
# Runtime libraries of the catalog's benchmarks (LevelDB links snappy and
# libstdc++; lmbench's lat_rpc links libtirpc) and the programs the wrappers
# run inside the container (time, strace, ltrace, valgrind, numactl, perf:
# `perfsnake validate` runs each wrapper in the image once and refuses the
# ones that fail); builds happen on the host and are mounted.
# PERFSNAKE_IMAGE_PACKAGES adds packages (comma-separated), e.g. a packaged
# benchmark's: postgresql-15,rt-tests.
INCLUDE=libstdc++6,libsnappy1v5,libjemalloc2,libgoogle-perftools4,libtirpc3,procps,time,strace,ltrace,valgrind,numactl,linux-perf
INCLUDE+=${PERFSNAKE_IMAGE_PACKAGES:+,$PERFSNAKE_IMAGE_PACKAGES}

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo"; else SUDO="none"; fi
fi

missing=()
for p in podman runc mmdebstrap uidmap; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$SUDO" = none ]; then
    echo "container.sh: ${missing[*]} not installed, and installing needs root (as root: apt-get install ${missing[*]})" >&2
    exit 1
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# crun (podman's default here) fails on rlimits with hybrid cgroups, and the
# default nofile/nproc limits are above what this kernel grants containers.
# Machine-wide when root (or sudo) may write it; else in this user's config.
CONF='# Written by perfsnake scripts/setup/container.sh
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"'
system_conf=/etc/containers/containers.conf.d/perfsnake.conf
if [ "$SUDO" != none ]; then
  $SUDO mkdir -p "$(dirname "$system_conf")"
  printf '%s\n' "$CONF" | $SUDO tee "$system_conf" >/dev/null
elif [ ! -e "$system_conf" ]; then
  user_conf=${XDG_CONFIG_HOME:-$HOME/.config}/containers/containers.conf
  if [ -e "$user_conf" ] && ! grep -q "perfsnake" "$user_conf"; then
    echo "container.sh: $user_conf exists; add runtime = \"runc\" and the ulimits of $0 to it" >&2
  else
    mkdir -p "$(dirname "$user_conf")"
    printf '%s\n' "$CONF" >"$user_conf"
  fi
fi

# One build at a time (test files running in parallel each ask for the image).
exec 9>"/var/tmp/perfsnake-image-$(id -u).lock"
flock 9
if podman image exists "$IMAGE" && [ "${PERFSNAKE_REBUILD_IMAGE:-0}" != 1 ]; then
  echo "image $IMAGE already present"
  exit 0
fi

# The root file system as a tar stream (root mode as root, unshare mode as a
# user); no package lists or caches in the image.
mmdebstrap --quiet --mode=auto --variant=minbase --include="$INCLUDE" \
  --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
  "$SUITE" - "$MIRROR" | podman import --quiet --change 'CMD ["/bin/sh"]' - "$IMAGE" >/dev/null
echo "built $IMAGE"
