#!/usr/bin/env python3
"""Runs stylegan2-ada-pytorch's own train.py, its training loop unchanged, under this machine's
PyTorch: the reference side of scripts/bench/gpu_quality.sh's curves at equal settings.

    python3 scripts/bench/reference_train.py --ref .gpu-kit/stylegan2-ada-pytorch -- \
        --outdir runs --data fm64.zip --gpus 1 --cfg auto --aug noaug --metrics none --snap 1 --kimg 40

The arguments after `--` are train.py's. PyTorch 2.x needs shims that leave the reference's code as
it is: its CUDA plugins registered under the names it imports them by and distutils.util.strtobool
where Python 3.12 has no distutils (reference_bench.py's), torch.utils.data.Sampler taking the
dataset its InfiniteSampler hands it, as the PyTorch of its time did (2.2 and later take nothing),
and a torch.utils.tensorboard that fails to import in any way failing as the ImportError it expects.

--cpu-loop runs the same loop on the CPU for the dry run: tiny networks (channel_base 256, float32),
two steps of 0.032 kimg ticks, and stand-ins for the few CUDA calls the loop makes itself (its
device, phase timing events, peak memory, page-locked latents); so that a GPU session finds the loop
working on this PyTorch, up to the snapshot pickles it writes.
"""
import argparse
import os
import sys
import types
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_bench import provide_distutils, register_plugins_by_name  # noqa: E402

provide_distutils()  # here too: the data loader's spawned workers import this file, then dnnlib


def tensorboard_or_none():
    """The loop skips its tfevents where importing torch.utils.tensorboard raises ImportError; any
    other error (a protobuf it cannot use, say) would end the training before its first step."""
    try:
        import torch.utils.tensorboard  # noqa: F401
    except Exception as error:  # noqa: BLE001 (whatever it is, the loop is to go on without)
        if not isinstance(error, ImportError):
            print(f'reference_train: torch.utils.tensorboard fails to import ({error!r}); no tfevents')
        sys.modules['torch.utils.tensorboard'] = None  # the loop's import then raises ImportError


def accept_sampler_data_source():
    """torch_utils/misc.py's InfiniteSampler calls Sampler.__init__(dataset), which PyTorch 2.2 removed."""
    import torch.utils.data
    if '__init__' not in vars(torch.utils.data.Sampler):
        torch.utils.data.Sampler.__init__ = lambda self, data_source=None: None


class _Event:
    """torch.cuda.Event's part that the loop uses, timing nothing."""

    def __init__(self, enable_timing=False):
        self.enable_timing = enable_timing

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return 0.0


def run_loop_on_the_cpu(train):
    """The training loop on the CPU: its module sees a torch whose device is the CPU and whose CUDA
    calls are stand-ins; train.py's options shrink to tiny float32 networks and two steps."""
    import torch
    from training import training_loop
    cpu_torch = types.ModuleType('torch')
    cpu_torch.__getattr__ = lambda name: getattr(torch, name)
    cpu_torch.device = lambda *args, **kwargs: torch.device('cpu')
    cpu_torch.cuda = types.SimpleNamespace(Event=_Event, current_stream=lambda device=None: None,
                                           max_memory_allocated=lambda device=None: 0,
                                           reset_peak_memory_stats=lambda device=None: None)
    training_loop.torch = cpu_torch
    torch.Tensor.pin_memory = lambda self, *args, **kwargs: self  # no page-locked memory without CUDA
    setup = train.setup_training_loop_kwargs

    def tiny(**kwargs):
        desc, args = setup(**kwargs)
        for net in (args.G_kwargs.synthesis_kwargs, args.D_kwargs):
            net.update(channel_base=256, channel_max=32, num_fp16_res=0)
        args.G_kwargs.update(z_dim=32, w_dim=32)
        args.update(total_kimg=0.064, kimg_per_tick=0.032, image_snapshot_ticks=1, network_snapshot_ticks=1)
        args.data_loader_kwargs.num_workers = 1
        return desc, args

    train.setup_training_loop_kwargs = tiny


def main():
    argv = sys.argv[1:]
    train_args = argv[argv.index('--') + 1:] if '--' in argv else []
    own_args = argv[:argv.index('--')] if '--' in argv else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--ref', required=True, help='stylegan2-ada-pytorch checkout')
    parser.add_argument('--cpu-loop', action='store_true', help='the loop on the CPU, tiny and short (a dry run)')
    args = parser.parse_args(own_args)
    sys.path.insert(0, os.path.abspath(args.ref))
    register_plugins_by_name()
    accept_sampler_data_source()
    tensorboard_or_none()
    # Said once: its conv2d_gradfix warns at every convolution on PyTorch 2.x, megabytes of log a tick.
    warnings.filterwarnings('once', message='conv2d_gradfix not supported')
    import train  # the reference's train.py
    if args.cpu_loop:
        run_loop_on_the_cpu(train)
    train.main(args=train_args, prog_name='train.py')


if __name__ == '__main__':  # not in the data loader's spawned workers, which import this file again
    main()
