#!/usr/bin/env python3
"""Times the reference Python implementation (NVlabs stylegan2-ada-pytorch) on the same config and
phases as `stylegan2_bench`, for side-by-side numbers on one machine.

    python3 scripts/bench/reference_bench.py --ref /path/to/stylegan2-ada-pytorch \
        [--config configs/bench-cpu-32.yaml] [--threads 2]

Needs PyTorch (Debian: python3-torch, the same LibTorch the C++ build uses), numpy and PyYAML, and
a checkout of stylegan2-ada-pytorch (not shipped here). Runs on the CPU in float32 with the
reference's own Generator, Discriminator and StyleGAN2Loss; the step is the reference training
loop's phase schedule (Gmain + Dmain every step, Greg every G_reg_interval, Dreg every
D_reg_interval), on random uint8 images of the configured shape.
"""
import argparse
import math
import sys
import time

import numpy as np
import torch
import yaml


def load_config(path):
    with open(path) as f:
        cfg = yaml.safe_load(f) or {}
    get = lambda section, key, default: (cfg.get(section) or {}).get(key, default)
    return dict(
        z_dim=get('G', 'z_dim', 512), w_dim=get('G', 'w_dim', 512), map=get('G', 'mapping_layers', 8),
        g_base=get('G', 'channel_base', 32768), g_max=get('G', 'channel_max', 512),
        d_base=get('D', 'channel_base', 32768), d_max=get('D', 'channel_max', 512),
        mbstd=get('D', 'mbstd_group_size', 4), batch=get('train', 'batch', 32),
        lr=get('optim', 'G_lr', 0.002), gamma=get('loss', 'r1_gamma', 10.0), pl_weight=get('loss', 'pl_weight', 2.0),
        g_reg=get('optim', 'G_reg_interval', 4), d_reg=get('optim', 'D_reg_interval', 16),
        resolution=get('data', 'resolution', 0) or 32, channels=get('data', 'channels', 0) or 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--ref', required=True, help='stylegan2-ada-pytorch checkout')
    parser.add_argument('--config', default='configs/bench-cpu-32.yaml')
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--warmup', type=int, default=2)
    parser.add_argument('--repeats', type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, args.ref)
    from training.networks import Generator, Discriminator  # noqa: E402 (from the reference checkout)
    from training.loss import StyleGAN2Loss  # noqa: E402

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    c = load_config(args.config)
    device = torch.device('cpu')
    G = Generator(z_dim=c['z_dim'], c_dim=0, w_dim=c['w_dim'], img_resolution=c['resolution'],
                  img_channels=c['channels'], mapping_kwargs=dict(num_layers=c['map']),
                  synthesis_kwargs=dict(channel_base=c['g_base'], channel_max=c['g_max'], num_fp16_res=0,
                                        conv_clamp=None)).train().requires_grad_(False)
    D = Discriminator(c_dim=0, img_resolution=c['resolution'], img_channels=c['channels'],
                      channel_base=c['d_base'], channel_max=c['d_max'], num_fp16_res=0, conv_clamp=None,
                      epilogue_kwargs=dict(mbstd_group_size=c['mbstd'])).train().requires_grad_(False)
    loss = StyleGAN2Loss(device=device, G_mapping=G.mapping, G_synthesis=G.synthesis, D=D,
                         r1_gamma=c['gamma'], pl_weight=c['pl_weight'])
    phases = []
    for name, module, interval in [('G', G, c['g_reg']), ('D', D, c['d_reg'])]:
        ratio = interval / (interval + 1)
        opt = torch.optim.Adam(module.parameters(), lr=c['lr'] * ratio, betas=[0, 0.99 ** ratio], eps=1e-8)
        phases += [(name + 'main', module, opt, 1), (name + 'reg', module, opt, interval)]

    batch = c['batch']
    real_c = torch.zeros([batch, 0])

    def run_phase(name, module, opt, interval):
        real = torch.randint(0, 256, [batch, c['channels'], c['resolution'], c['resolution']], dtype=torch.uint8)
        real = real.to(torch.float32) / 127.5 - 1
        z = torch.randn([batch, c['z_dim']])
        opt.zero_grad(set_to_none=True)
        module.requires_grad_(True)
        loss.accumulate_gradients(phase=name, real_img=real, real_c=real_c, gen_z=z, gen_c=real_c, sync=True,
                                  gain=interval)
        module.requires_grad_(False)
        for p in module.parameters():
            if p.grad is not None:
                torch.nan_to_num(p.grad, nan=0, posinf=1e5, neginf=-1e5, out=p.grad)
        opt.step()

    def step(batch_idx):
        for phase in phases:
            if batch_idx % phase[3] == 0:
                run_phase(*phase)

    for i in range(args.warmup):
        step(i)
    print(f'reference stylegan2-ada-pytorch, torch {torch.__version__}, {args.threads} threads, batch {batch}, '
          f'resolution {c["resolution"]}')
    print(f'{"phase":<10} {"ms/call":>10} {"img/s":>10}')
    for phase in phases:
        t = time.perf_counter()
        for _ in range(args.repeats):
            run_phase(*phase)
        seconds = (time.perf_counter() - t) / args.repeats
        print(f'{phase[0]:<10} {seconds * 1e3:>10.1f} {batch / seconds:>10.2f}')
    cycle = math.lcm(c['g_reg'], c['d_reg'])
    t = time.perf_counter()
    for i in range(cycle):
        step(i)
    seconds = (time.perf_counter() - t) / cycle
    print(f'step       {seconds * 1e3:>10.1f} {batch / seconds:>10.2f}   (mean of {cycle} steps)')
    print(f'throughput {batch / seconds:.2f} img/s, {1000 * seconds / batch:.2f} s/kimg')


if __name__ == '__main__':
    main()
