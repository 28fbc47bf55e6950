#!/usr/bin/env python3
"""Writes the parity fixtures of the augmentation pipeline (tests/fixtures/augment/) from the
reference's AugmentPipe (NVlabs/stylegan2-ada-pytorch, training/augment.py).

    PYTHONPATH=$(scripts/torch_wheel.sh):SCIPY_DIR python3 scripts/make_augment_fixture.py \
        --ref CHECKOUT --out tests/fixtures/augment

One fixture a case: every op of the reference's pipelines alone (xflip, rotate90, xint, scale,
rotate, aniso, xfrac, brightness, contrast, lumaflip, hue, saturation, imgfilter, noise, cutout) and
the pipelines 'bgc' and 'bgcfnc', on RGB and on one-channel images. The reference runs on the CPU in
float32 with its ops as their reference implementations.

How the random draws are fixed: the pipeline draws every random number with torch.rand and
torch.randn, in an order fixed by its code. This script replaces both, while the pipeline runs, with
functions that draw as usual (from a generator seeded per case) and record each result in order;
the fixture holds them as draw.000, draw.001, ... (with their kind, rand or randn, in the JSON).
The C++ test replays them in the same order, so both sides transform the same images by the same
parameters, and a different order or count of draws fails the test by name.

Each NAME.pt holds: images [4, C, 24, 24] in [-1, 1]; out = pipe(images); grad = d sum(out * g) /
d images, g = sin(0.37 i) over the output's elements in order; and the draws. NAME.json: the pipeline's options, p, the
draws' kinds and shapes.
"""
import argparse
import json
import os
import sys

import torch

OPS = ['xflip', 'rotate90', 'xint', 'scale', 'rotate', 'aniso', 'xfrac', 'brightness', 'contrast', 'lumaflip',
       'hue', 'saturation', 'imgfilter', 'noise', 'cutout']
PIPELINES = {
    'bgc': ['xflip', 'rotate90', 'xint', 'scale', 'rotate', 'aniso', 'xfrac', 'brightness', 'contrast', 'lumaflip',
            'hue', 'saturation'],
    'bgcfnc': OPS,
}


class RecordedDraws:
    """torch.rand and torch.randn as usual (from `generator`), each result kept in order."""

    def __init__(self, generator):
        self.generator = generator
        self.draws = []  # (kind, tensor)

    def __enter__(self):
        self.rand, self.randn = torch.rand, torch.randn
        torch.rand = lambda shape, device=None: self.record('rand', self.rand(shape, generator=self.generator))
        torch.randn = lambda shape, device=None: self.record('randn', self.randn(shape, generator=self.generator))
        return self

    def __exit__(self, *exc):
        torch.rand, torch.randn = self.rand, self.randn

    def record(self, kind, tensor):
        self.draws.append((kind, tensor.clone()))
        return tensor


def output_weight(shape):
    """The weight g of the output in the gradient's loss: sin(0.37 i) over the elements in order."""
    count = 1
    for size in shape:
        count *= size
    return torch.sin(torch.arange(count, dtype=torch.float32) * 0.37).reshape(shape)


def write_case(AugmentPipe, name, ops, channels, out_dir, seed):
    torch.manual_seed(seed)
    options = {op: 1 for op in ops}
    pipe = AugmentPipe(**options)
    pipe.p.copy_(torch.tensor(0.8))  # most draws pass, some do not: both sides of every where()
    images = (torch.rand([4, channels, 24, 24]) * 2 - 1).requires_grad_(True)  # imgfilter pads by 21
    with RecordedDraws(torch.Generator().manual_seed(seed + 1)) as recorded:
        out = pipe(images)
    g = output_weight(out.shape)
    grad, = torch.autograd.grad((out * g).sum(), [images])
    tensors = {'images': images.detach(), 'out': out.detach(), 'grad': grad}
    for i, (_, tensor) in enumerate(recorded.draws):
        tensors[f'draw.{i:03d}'] = tensor
    torch.save(tensors, os.path.join(out_dir, name + '.pt'))
    meta = {'options': options, 'p': 0.8,
            'draws': [{'kind': kind, 'shape': list(tensor.shape)} for kind, tensor in recorded.draws]}
    with open(os.path.join(out_dir, name + '.json'), 'w') as f:
        json.dump(meta, f, indent=1)
    print(f'{name}: {len(recorded.draws)} draws, out {list(out.shape)}')


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--ref', required=True, help='stylegan2-ada-pytorch checkout')
    parser.add_argument('--out', required=True, help='directory of the fixtures')
    args = parser.parse_args()
    sys.path.insert(0, args.ref)
    from training.augment import AugmentPipe  # noqa: E402 (from the reference checkout)
    os.makedirs(args.out, exist_ok=True)
    cases = [(op, [op]) for op in OPS] + list(PIPELINES.items())
    for index, (name, ops) in enumerate(cases):
        for channels in (3, 1):
            if channels == 1 and name in ('hue', 'saturation'):
                continue  # the reference skips them on one channel: nothing to compare
            write_case(AugmentPipe, f'augment_{name}_c{channels}', ops, channels, args.out, 100 * index + channels)


if __name__ == '__main__':
    main()
