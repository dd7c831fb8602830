#!/usr/bin/env bash
# Prepares the container platform without any registry: podman with runc,
# and a minimal local Debian image built with debootstrap + podman import.
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
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in podman runc debootstrap uidmap; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# crun (podman's default here) fails on rlimits with hybrid cgroups, and the
# default nofile/nproc limits are above what this kernel grants containers.
conf_dir=/etc/containers/containers.conf.d
$SUDO mkdir -p "$conf_dir"
$SUDO tee "$conf_dir/perfsnake.conf" >/dev/null <<'CONF'
# Written by perfsnake scripts/setup/container.sh
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
CONF

# One build at a time (test files running in parallel each ask for the image).
exec 9>"/var/tmp/perfsnake-image-$(id -u).lock"
flock 9
if podman image exists "$IMAGE" && [ "${PERFSNAKE_REBUILD_IMAGE:-0}" != 1 ]; then
  echo "image $IMAGE already present"
  exit 0
fi

root=$(mktemp -d /var/tmp/perfsnake-rootfs.XXXXXX)
trap '$SUDO rm -rf "$root"' EXIT
$SUDO debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$root" "$MIRROR" >/dev/null
# Smaller image: no package lists or caches.
$SUDO rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
$SUDO tar -C "$root" -c . | podman import --change 'CMD ["/bin/sh"]' - "$IMAGE" >/dev/null
echo "built $IMAGE"
