#!/usr/bin/env bash
# The models' GPU figures in one short run (for a lent GPU machine; never part of CI).
#
#   OUT=/tmp/gpu bash benchmarks/run_gpu.sh [train-step] [profile] [bigbird] [bigbird-train]
#
# Writes logs, JSON and the attention-scaling plot for CUDA under $OUT (all parts when none is named).
# Each part has its own time limit so that a slow part still leaves the earlier results behind.
set -u -o pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/subword-gpu}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
parts=${*:-train-step profile bigbird bigbird-train}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$OUT/gpu.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" \
    | tee -a "$OUT/gpu.txt"
for part in $parts; do
    case $part in
    train-step) timeout 120 python3 benchmarks/bench_models_train_step.py --device cuda --batch 32 --runs 20 \
        --warmup 5 --json "$OUT/train_step_cuda.json" 2>&1 | tee "$OUT/train_step_cuda.log" ;;
    profile) timeout 90 python3 benchmarks/profile_bigbird.py --device cuda --seq-len 8192 --rows 30 2>&1 \
        | grep -v '^USDT\|^ERROR:.*DeviceProperties' | tee "$OUT/profile_bigbird_cuda.log" ;;
    bigbird) timeout 150 python3 benchmarks/bench_models_bigbird.py --device cuda --repeats 10 --runs 2 --scaling \
        --plot "$OUT/attention_scaling_cuda.png" --json "$OUT/bigbird_cuda.json" 2>&1 | tee "$OUT/bigbird_cuda.log" ;;
    bigbird-train) timeout 90 python3 benchmarks/bench_models_bigbird.py --device cuda --repeats 10 --runs 2 \
        --mode train --json "$OUT/bigbird_train_cuda.json" 2>&1 | tee "$OUT/bigbird_train_cuda.log" ;;
    *) echo "unknown part: $part" >&2; exit 2 ;;
    esac
done
