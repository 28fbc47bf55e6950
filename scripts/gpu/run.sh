#!/usr/bin/env bash
# The GPU kit. On a machine with an NVIDIA GPU, PyTorch (python3 -c 'import torch'), the CUDA toolkit
# and nothing of ours, in the repository root with .gpu-kit/ from scripts/gpu/prepare.sh beside it:
# unpacks the kit's Debian packages into a private prefix, takes the kit's prebuilt binaries (or
# builds against that PyTorch's LibTorch and its NCCL), runs the CUDA checks and writes
# $OUT/summary.md (default gpu-results/) and one log of every step ($OUT/steps.log). Every step runs
# even when an earlier one failed, within its time limit and the kit's budget (kit_steps.sh); the
# exit code is the number of failed steps. SG2_KIT_STEPS names the steps of one call (default: all):
# scripts/gpu/session.sh splits them, with the training-speed comparison, over the one or two calls
# that a GPU session's 15 minutes of device time hold.
#   scripts/gpu/run.sh                 # on the GPU machine (device run, carry .gpu-kit)
#   scripts/gpu/run.sh --cpu-dry-run   # the same steps on a CPU machine (device cpu, NCCL steps skipped)
# Steps, in the order of what a GPU session must learn first: environment, build; the GPU's tests
# alone (the CUDA kernels against their reference ops, the device module, the trainer and G_ema on
# the GPU); the collectives on NCCL with the communicator's device; parity_check on the GPU with
# TF32 off; a short fashion32 training on the GPU; resume on the GPU, on the CPU from the GPU
# snapshot and back; the same training through the NCCL backend; mixed precision with
# train.batch_gpu auto; the comm bench. Then: the CPU test suite on that build, FID of the resumed
# snapshot on the GPU against the CPU, mixed precision channels_last, the same without a host
# synchronisation in a step (under run.host_sync_check warn, then error), one copy each of libnccl
# and libcudart in a process, the op bench, the CUDA kernels' tests under compute-sanitizer, and
# training with run.cuda_graphs against without, then a training with it.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/kit_steps.sh

mode=gpu
[ "${1:-}" = --cpu-dry-run ] && mode=cpu
device=cuda
[ "$mode" = cpu ] && device=cpu
out=${OUT:-$PWD/gpu-results}
deps=${SG2_KIT_PREFIX:-/tmp/sg2-deps}
build=${GPU_BUILD_DIR:-build-gpu}
work=$(mktemp -d)
kit_init "$out"

step_always environment report_environment
step_always unpack unpack_kit .gpu-kit "$deps"
use_prefix "$deps"
step_in_shell build provide_build "$build" "$deps"  # its exports (library paths) serve the later steps
# The GPU's own tests; on a GPU none may skip (a skip there means CUDA went unseen).
no_skips=()
[ "$mode" = gpu ] && no_skips=(lacks "SKIPPED")
step gpu_tests "${no_skips[@]}" run_filtered_tests "$build" "${gpu_tests[@]}"
if [ "$mode" = gpu ]; then
  step nccl_collectives env SG2_TEST_BACKEND=nccl SG2_TEST_DEVICE=cuda "$build/tests/test_dist"
else
  skip nccl_collectives "no GPU (--cpu-dry-run)"
fi
# The shared fixture (copied into the kit) and ours (every architecture, conditioning, RGB).
parity_fixtures=(tests/fixtures/parity/*.pt)
[ -f .gpu-kit/fixtures/parity_tiny.pt ] && parity_fixtures=(.gpu-kit/fixtures/parity_tiny.pt "${parity_fixtures[@]}")
step parity parity_on "$build/tests/parity_check" "$device" "${parity_fixtures[@]}"
# kimg at which each run stops: 2 on the GPU (a few seconds), 0.032 on two CPU cores.
kimg=(2 3 3.5 4) tick=0.5
[ "$mode" = cpu ] && kimg=(0.032 0.048 0.064 0.08) tick=0.016
trainer="$build/bin/stylegan2_train"
step train "$trainer" --config configs/fashion32.yaml --outdir "$work/runs" --data.max_images 4096 \
    --run.image_snapshot_ticks 0 --train.kimg_per_tick "$tick" --run.network_snapshot_ticks 1 \
    --run.device "$device" --kimg "${kimg[0]}"
run_dir=$(ls -d "$work"/runs/00000-* 2>/dev/null)
step resume_same_device "$trainer" --resume "$run_dir" --kimg "${kimg[1]}" --run.device "$device"
step resume_on_cpu "$trainer" --resume "$run_dir" --kimg "${kimg[2]}" --run.device cpu
step resume_back_on_device "$trainer" --resume "$run_dir" --kimg "${kimg[3]}" --run.device "$device"
# The training step through the NCCL backend (one process: the gradient reducer's hooks, its bucket
# allreduces on NCCL's stream, the events and the watchdog, which the local backend skips).
if [ "$mode" = gpu ]; then
  step train_nccl_reducer "$trainer" --config configs/fashion32.yaml --outdir "$work/runs-nccl" \
      --data.max_images 4096 --run.image_snapshot_ticks 0 --train.kimg_per_tick "$tick" --run.device cuda \
      --dist.backend nccl --kimg "${kimg[0]}"
else
  skip train_nccl_reducer "no GPU (--cpu-dry-run)"
fi
# Mixed precision (float16 on the GPU, bfloat16 on the CPU) in the two highest resolutions, with the
# per-round batch probed (on the GPU within a budget that the log explains).
precision=float16
[ "$mode" = cpu ] && precision=bfloat16
mixed=(--config configs/fashion32.yaml --data.max_images 4096 --run.image_snapshot_ticks 0 --train.kimg_per_tick "$tick"
       --run.device "$device" --run.mixed_precision "$precision" --G.num_fp16_res 2 --D.num_fp16_res 2
       --G.conv_clamp 256 --D.conv_clamp 256 --kimg "${kimg[0]}")
probe_budget=()
[ "$mode" = gpu ] && probe_budget=(says "GiB in use outside LibTorch's allocator")
step train_mixed_precision_batch_auto "${probe_budget[@]}" "$trainer" "${mixed[@]}" --outdir "$work/runs-mixed" \
    --train.batch_gpu auto
if [ "$mode" = gpu ]; then
  step bench_comm "$build/bin/stylegan2_bench" comm --run.device cuda --dist.backend nccl
else
  skip bench_comm "no GPU (--cpu-dry-run)"
fi
# What a GPU session learns second (scripts/gpu/session.sh's second call).
step cpu_suite run_cpu_suite "$build"
# FID on the device against the CPU, on the resumed run's last snapshot, with a built-in detector
# trained here (one epoch of 10,000 images: seconds on the CPU).
metrics="$build/bin/stylegan2_metrics"
step train_detector "$metrics" train-detector --data /usr/share/datasets/fashion-mnist --epochs 1 --max-images 10000 \
    --out "$work/detector.pt"
step fid_matches_cpu fid_matches_cpu "$metrics" "$(ls "$run_dir"/network-snapshot-*.pt 2>/dev/null | sort -V | tail -n 1)" \
    "$work/detector.pt" "$device" "$work"
# The same with the reduced-precision blocks channels_last (run.channels_last reduced), as the log says.
step train_channels_last says "channels_last in $precision" "$trainer" "${mixed[@]}" --outdir "$work/runs-nhwc" \
    --run.channels_last reduced
# No LibTorch op inside a step makes the host wait for the GPU, in the same precision, through the
# NCCL backend's reducer on the GPU: run.host_sync_check warn names every part of a step that waits
# and counts its waits, and a batch in pageable memory (none may be logged); error throws at the
# first, with its stack. The log's Compute line says the check is on (a LibTorch without CUDA, which
# cannot check, says so instead).
sync_backend=()
[ "$mode" = gpu ] && sync_backend=(--dist.backend nccl)
step train_host_sync_warnings says "host synchronisation in a step: warn" \
    lacks "made the host wait\|waits for the host" "$trainer" "${mixed[@]}" --outdir "$work/runs-sync-warn" \
    --run.channels_last reduced --run.host_sync_check warn "${sync_backend[@]}"
step train_without_host_sync says "host synchronisation in a step: error" env TORCH_SHOW_CPP_STACKTRACES=1 \
    "$trainer" "${mixed[@]}" --outdir "$work/runs-sync" --run.channels_last reduced --run.host_sync_check error \
    "${sync_backend[@]}"
step one_copy_of_each_library check_single_library_copies "$build/bin/stylegan2_bench" comm --run.device "$device" \
    --max-bytes 1048576 --iters 2 --warmup 1
# upfirdn2d and bias_act at config-f's shapes at 256x256 (float16 with the clamp of the reference's
# float16 layers, both layouts): the specialised CUDA kernels (tiled FIR, bias_act in 16-byte packs),
# the generic ones and the reference ops, against a device copy's bandwidth.
if [ "$mode" = gpu ]; then
  step bench_ops "$build/bin/stylegan2_bench" ops --config configs/config-f.yaml --run.device cuda --G.conv_clamp 256 \
      --D.conv_clamp 256
else
  step bench_ops "$build/bin/stylegan2_bench" ops --config configs/config-f.yaml --run.device cpu --resolution 16 \
      --ops-batch 2 --ops-repeats 1 --G.conv_clamp 256 --D.conv_clamp 256
fi
# Training speed is gpu_vs_reference.sh's (scripts/gpu/session.sh runs it beside the kit's steps).
# Last, in what is left of the budget: the CUDA kernels' tests under compute-sanitizer's memcheck, for
# an out-of-bounds or misaligned access that the compared results would not show.
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ "$mode" = gpu ] && [ -x "$sanitizer" ]; then
  # Without LibTorch's caching allocator every tensor is an allocation of its own, whose bounds memcheck
  # knows; a test skipped for want of CUDA would check nothing, so none may be. Under gVisor (the H200
  # machines seen so far) compute-sanitizer refuses the GPU: the step is then skipped, not failed.
  step kernels_memcheck lacks "SKIPPED" unless_refused "Device not supported" \
      env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$sanitizer" --tool memcheck \
      --error-exitcode 9 --print-limit 20 "$build/bin/test_ops" --gtest_filter='CudaKernels.*'
else
  skip kernels_memcheck "no GPU or no compute-sanitizer"
fi
# run.cuda_graphs against the same training without (test_phase_graphs.cpp), by itself and last:
# it had never run on a GPU, and a capture that hung would take a step's whole limit, so it gets
# SG2_KIT_GRAPHS_LIMIT_S (default 60 s; it takes seconds) and nothing waits behind it.
SG2_KIT_STEP_LIMIT_S=${SG2_KIT_GRAPHS_LIMIT_S:-60}  # the last steps' limit
step gpu_graphs "${no_skips[@]}" run_filtered_tests "$build" "bin/test_train|Trainer.CudaGraphsTrainAsThePhasesWithoutThem"
# And as a user runs it: mixed precision channels_last, the batch probed for graphs (the log's tries
# say what a candidate needs with them), all four phases captured (Dreg, every 16 steps, at step 32
# of the 125 that 2 kimg at fashion32's batch of 16 take), then replayed to the end.
if [ "$mode" = gpu ]; then
  step train_cuda_graphs says "Dreg: captured into a CUDA graph" "$trainer" "${mixed[@]}" --outdir "$work/runs-graphs" \
      --run.channels_last reduced --run.cuda_graphs true --train.batch_gpu auto
  # The same under run.host_sync_check warn, which names any part of a step that waits for the GPU:
  # in the third H200 run a step with graphs still took the host 107.8 of its 136.3 ms (284.3 of
  # 300.4 at 4 images a round) while its phases issued in 1-3 ms each.
  step train_cuda_graphs_host_sync says "host synchronisation in a step: warn" \
      lacks "made the host wait\|waits for the host" "$trainer" "${mixed[@]}" --outdir "$work/runs-graphs-sync" \
      --run.channels_last reduced --run.cuda_graphs true --run.host_sync_check warn
else
  skip train_cuda_graphs "no GPU (--cpu-dry-run): run.cuda_graphs needs a CUDA device"
  skip train_cuda_graphs_host_sync "no GPU (--cpu-dry-run): run.cuda_graphs needs a CUDA device"
fi
rm -rf "$work"
kit_finish
