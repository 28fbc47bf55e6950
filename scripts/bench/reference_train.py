#!/usr/bin/env python3
"""Runs stylegan2-ada-pytorch's own train.py, its training loop unchanged, under this machine's
PyTorch: the reference side of scripts/bench/gpu_quality.sh's curves at equal settings.

    python3 scripts/bench/reference_train.py --ref .gpu-kit/stylegan2-ada-pytorch -- \
        --outdir runs --data fm64.zip --gpus 1 --cfg auto --aug noaug --metrics none --snap 1 --kimg 40

The arguments after `--` are train.py's. PyTorch 2.x needs two shims that leave the reference's code
as it is (reference_bench.py's): its CUDA plugins registered under the names it imports them by,
and distutils.util.strtobool where Python 3.12 has no distutils.

--cpu-snapshot PKL writes instead, on the CPU, the snapshot pickle that the training loop writes at
0 kimg (G, D and G_ema as train.py's options build them, pickled with their source code as the loop
pickles them): the dry run's stand-in for a training, whose loop needs CUDA.
"""
import argparse
import copy
import os
import pickle
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_bench import provide_distutils, register_plugins_by_name  # noqa: E402


def write_initial_snapshot(train, train_args, pkl):
    """The pickle training_loop.py saves at 0 kimg, built on the CPU from train.py's options."""
    import dnnlib
    context = train.main.make_context('train.py', list(train_args))
    options = dict(context.params)
    options.pop('outdir')
    options.pop('dry_run')
    _, args = train.setup_training_loop_kwargs(**options)
    training_set = dnnlib.util.construct_class_by_name(**args.training_set_kwargs)
    shape = dict(c_dim=training_set.label_dim, img_resolution=training_set.resolution,
                 img_channels=training_set.num_channels)
    G = dnnlib.util.construct_class_by_name(**args.G_kwargs, **shape).train().requires_grad_(False)
    D = dnnlib.util.construct_class_by_name(**args.D_kwargs, **shape).train().requires_grad_(False)
    snapshot = dict(training_set_kwargs=dict(args.training_set_kwargs), augment_pipe=None)
    for name, module in [('G', G), ('D', D), ('G_ema', copy.deepcopy(G))]:
        snapshot[name] = copy.deepcopy(module).eval().requires_grad_(False)
    with open(pkl, 'wb') as f:
        pickle.dump(snapshot, f)
    print(f'reference_train: wrote {pkl} (0 kimg, {shape["img_resolution"]}x{shape["img_resolution"]}, '
          f'{shape["img_channels"]} channels)')


def main():
    argv = sys.argv[1:]
    train_args = argv[argv.index('--') + 1:] if '--' in argv else []
    own_args = argv[:argv.index('--')] if '--' in argv else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--ref', required=True, help='stylegan2-ada-pytorch checkout')
    parser.add_argument('--cpu-snapshot', metavar='PKL', help="write the 0-kimg snapshot pickle on the CPU and exit")
    args = parser.parse_args(own_args)
    sys.path.insert(0, os.path.abspath(args.ref))
    register_plugins_by_name()
    provide_distutils()
    # Said once: its conv2d_gradfix warns at every convolution on PyTorch 2.x, megabytes of log a tick.
    warnings.filterwarnings('once', message='conv2d_gradfix not supported')
    import train  # the reference's train.py
    if args.cpu_snapshot:
        write_initial_snapshot(train, train_args, args.cpu_snapshot)
        return
    train.main(args=train_args, prog_name='train.py')


if __name__ == '__main__':  # not in the data loader's spawned workers, which import this file again
    main()
