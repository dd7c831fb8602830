#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, to try profiles/slurm without
# a real cluster (the test suite starts the same one: tests/slurm_cluster.py).
# Needs root and the Debian packages slurm-wlm and munge. Writes
# /etc/slurm/slurm.conf (refuses if a real one is there) and keeps its key,
# state and logs in DIR (default /tmp/perfsnake-slurm).
#
#   scripts/setup/slurm_local.sh start [DIR]
#   .venv/bin/snakemake --profile profiles/slurm --workflow-profile none all \
#       --config campaign=config/campaigns/heater.yaml
#   scripts/setup/slurm_local.sh stop [DIR]     # ends every daemon and job, removes slurm.conf
#   scripts/setup/slurm_local.sh status [DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
action=${1:?usage: $0 start|stop|status [DIR]}
dir=${2:-${TMPDIR:-/tmp}/perfsnake-slurm}
py=.venv/bin/python
[ -x "$py" ] || py=python3
exec "$py" tests/slurm_cluster.py "$action" --dir "$dir"
