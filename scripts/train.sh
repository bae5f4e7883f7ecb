#!/usr/bin/env bash
# Set up (as scripts/test.sh does) and train the default config on jitr_shapes,
# then print the results table. Extra arguments go to jitr-train, e.g.
#   scripts/train.sh --config.graded.relevance=oracle --workdir=/tmp/jitr/oracle
# A second run reuses the dataset, the relevance records and the compiled steps
# (JAX's compilation cache) under workdirs/tfds.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup_env.sh
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
workdir="workdirs/default"
for arg in "$@"; do
  case "$arg" in --workdir=*) workdir="${arg#--workdir=}" ;; esac
done
jitr_step "Training configs/default.py in $workdir (build the dataset if missing, precompute relevance, train, test)"
exec python -m jitr.apps.train --config=configs/default.py --workdir="$workdir" "$@"
