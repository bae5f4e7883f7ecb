#!/usr/bin/env bash
# Set up (as scripts/test.sh does) and train the default config on jitr_shapes,
# then print the results table. Extra arguments go to jitr-train, e.g.
#   scripts/train.sh --config.relevance=oracle --workdir=/tmp/jitr/oracle
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup_env.sh
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
workdir="workdirs/default"
for arg in "$@"; do
  case "$arg" in --workdir=*) workdir="";; esac
done
exec python -m jitr.apps.train --config=configs/default.py ${workdir:+--workdir="$workdir"} "$@"
