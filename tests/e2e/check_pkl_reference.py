#!/usr/bin/env python3
"""stylegan2-ada-pytorch's own loader on a pickle stylegan2_export wrote: legacy.load_network_pkl's
G, D and G_ema hold exactly the snapshot's tensors, and G_ema renders each seed as the reference's
generate.py does (z = numpy.random.RandomState(seed).randn(1, z_dim), truncation, noise mode; here
on the CPU) to the PNGs stylegan2_generate wrote, within 1 of 255 per channel.

    PYTHONPATH=$(scripts/torch_wheel.sh) /usr/bin/python3 check_pkl_reference.py \
        REFERENCE_CHECKOUT PKL SNAPSHOT PNG_DIR SEEDS TRUNCATION NOISE_MODE

The reference's legacy.py needs click and requests importable (pip install click requests).
"""
import os
import pickle  # noqa: F401 (the loader's)
import sys

import numpy as np
import torch
from PIL import Image


def main():
    ref, pkl, snapshot_path, png_dir, seeds, psi, noise_mode = sys.argv[1:8]
    sys.path[:0] = [ref, os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../scripts/bench')]
    from reference_bench import provide_distutils
    provide_distutils()
    import legacy  # the reference's

    with open(pkl, 'rb') as f:
        networks = legacy.load_network_pkl(f)
    snapshot = torch.load(snapshot_path, map_location='cpu', weights_only=False)  # ours: a typed dict
    failures = []
    for name in ('G', 'D', 'G_ema'):
        for key, value in networks[name].state_dict().items():
            ours = snapshot.get(f'{name}.{key}')
            if ours is None or ours.shape != value.shape or not torch.equal(ours.float(), value.float()):
                failures.append(f'{name}.{key} differs from the snapshot')
    G = networks['G_ema']
    label = torch.zeros([1, G.c_dim])
    for seed in [int(s) for s in seeds.split(',')]:
        z = torch.from_numpy(np.random.RandomState(seed).randn(1, G.z_dim))
        img = G(z, label, truncation_psi=float(psi), noise_mode=noise_mode)
        img = (img.permute(0, 2, 3, 1) * 127.5 + 128).clamp(0, 255).to(torch.uint8)[0].numpy()
        ours = np.array(Image.open(os.path.join(png_dir, f'seed{seed:04d}.png'))).reshape(img.shape)
        worst = int(np.abs(ours.astype(int) - img.astype(int)).max())
        print(f'seed {seed}: largest difference {worst} of 255')
        if worst > 1:
            failures.append(f'seed {seed}: the reference renders another image (difference {worst} of 255)')
    for failure in failures:
        print('FAIL:', failure)
    print(f'check_pkl_reference: {len(failures)} failure(s)')
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
