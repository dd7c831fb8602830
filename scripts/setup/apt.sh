#!/usr/bin/env bash
# Installs the Debian packages perfsnake needs and enables deb-src so that
# `apt-get source` can fetch benchmark sources. Idempotent: re-running it only
# installs what is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake dpkg-dev fakeroot git ca-certificates curl
  linux-perf libgmock-dev libgtest-dev libsnappy-dev
  python3-venv time procps
  # localedef's sources: the decimal-comma locale test of perf stat's parser.
  locales
  numactl strace ltrace valgrind libjemalloc2 libgoogle-perftools4
  # Workload catalog (issue 24): the system tools and stores benchmarked
  # through their packaged binaries.
  stress-ng sysbench fio rt-tests rocksdb-tools kyotocabinet-utils
  # Servers with their clients, each run starting its own (issue 24).
  redis-server redis-tools memcached libmemcached-tools postgresql-15 mariadb-server
  # Tracing (issue 16): bpftrace programs attached to runs.
  bpftrace
  # Layout noise floor (issue 22): lld shuffles a build's function order.
  lld
  # The history dashboard's tests load it in a real browser (selenium drives it).
  chromium chromium-driver
  # lmbench's lat_rpc: Sun RPC (no longer in glibc), found through pkg-config.
  libtirpc-dev pkgconf
)
# Platforms beyond this machine (issue 7): an sshd for the ssh platform's
# tests, podman with runc and mmdebstrap for the container platform, a
# single-node Slurm cluster for the Slurm profile's tests. Installed with
# their recommended packages (podman's storage and runtime helpers).
PLATFORM_PACKAGES=(
  openssh-server openssh-client podman runc mmdebstrap uidmap slirp4netns
  slurm-wlm munge
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

src_list=/etc/apt/sources.list.d/perfsnake-deb-src.sources
need_update=0
if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  # Mirror the binary suites of the main Debian entry as source suites.
  . /etc/os-release
  $SUDO tee "$src_list" >/dev/null <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: ${VERSION_CODENAME} ${VERSION_CODENAME}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  need_update=1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
missing_platform=()
for p in "${PLATFORM_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing_platform+=("$p")
done
stamp=/var/lib/apt/periodic/perfsnake-update-stamp
if [ "$need_update" = 1 ] || [ ${#missing[@]} -gt 0 ] || [ ${#missing_platform[@]} -gt 0 ] || [ ! -e "$stamp" ]; then
  $SUDO apt-get update -qq
  $SUDO mkdir -p "$(dirname "$stamp")" && $SUDO touch "$stamp"
fi
if [ ${#missing[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ${#missing_platform[@]} -gt 0 ]; then
  # Daemons are started by the tests (and by users) when needed, not at
  # install time (an existing policy is left as it is).
  own_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    own_policy=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing_platform[@]}" || status=$?
  if [ "$own_policy" = 1 ]; then $SUDO rm -f /usr/sbin/policy-rc.d; fi
  exit "${status:-0}"
fi
