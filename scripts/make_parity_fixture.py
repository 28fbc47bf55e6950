#!/usr/bin/env python3
"""Writes a parity fixture (../shared/fixtures/README.md's format) from the reference networks of
NVlabs/stylegan2-ada-pytorch, or checks that this script computes an existing fixture's entries.

    PYTHONPATH=$(scripts/torch_wheel.sh) python3 scripts/make_parity_fixture.py --ref CHECKOUT \
        --out tests/fixtures/parity/NAME [--G.architecture orig] [--D.architecture skip] [--c-dim 4] ...
    PYTHONPATH=$(scripts/torch_wheel.sh) python3 scripts/make_parity_fixture.py --ref CHECKOUT \
        --check ../shared/fixtures/parity_tiny

The reference runs on the CPU in float32 (num_fp16_res 0, conv_clamp None), its ops as their
reference implementations. Every parameter and the mapping's w_avg are perturbed by N(0, 0.1), so
biases, noise strengths and truncation are exercised. Inputs: z ~ N(0, 1); c one-hot classes (empty
without conditioning); real images uniform in [-1, 1]; the path-length noise N(0, 1) / sqrt(H W).
Losses as the reference's StyleGAN2Loss computes them for one phase each, without lazy-regularization
gains, with const noise and the path-length running mean starting at 0 (its lerp to the batch's mean
enters the penalty detached). --check recomputes a fixture's outputs from its own weights and inputs
and prints each entry's relative error (1e-4 forward, 1e-3 gradients, as parity_check).
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'bench'))
from reference_bench import provide_distutils  # noqa: E402 (the reference's dnnlib needs distutils)


def network_config(args):
    G = dict(z_dim=args.z_dim, c_dim=args.c_dim, w_dim=args.w_dim, img_resolution=args.resolution,
             img_channels=args.channels, mapping_layers=args.mapping_layers, channel_base=args.channel_base,
             channel_max=args.channel_max, architecture=args.G_architecture)
    D = dict(c_dim=args.c_dim, img_resolution=args.resolution, img_channels=args.channels,
             channel_base=args.channel_base, channel_max=args.channel_max, architecture=args.D_architecture,
             mbstd_group_size=args.mbstd_group_size, mbstd_num_channels=args.mbstd_num_channels)
    return dict(reference='stylegan2-ada-pytorch training/networks.py (float32, num_fp16_res=0, conv_clamp=None)',
                G=G, D=D, r1_gamma=args.r1_gamma, pl_weight=args.pl_weight, pl_decay=args.pl_decay,
                truncation_psi=args.truncation_psi, batch=args.batch, noise_mode='const')


def build_networks(config):
    from training.networks import Generator, Discriminator  # the reference checkout (--ref)
    g, d = config['G'], config['D']
    G = Generator(z_dim=g['z_dim'], c_dim=g['c_dim'], w_dim=g['w_dim'], img_resolution=g['img_resolution'],
                  img_channels=g['img_channels'], mapping_kwargs=dict(num_layers=g['mapping_layers']),
                  synthesis_kwargs=dict(channel_base=g['channel_base'], channel_max=g['channel_max'],
                                        architecture=g['architecture'], num_fp16_res=0, conv_clamp=None))
    D = Discriminator(c_dim=d['c_dim'], img_resolution=d['img_resolution'], img_channels=d['img_channels'],
                      channel_base=d['channel_base'], channel_max=d['channel_max'], architecture=d['architecture'],
                      num_fp16_res=0, conv_clamp=None,
                      epilogue_kwargs=dict(mbstd_group_size=d['mbstd_group_size'],
                                           mbstd_num_channels=d['mbstd_num_channels']))
    return G.eval().requires_grad_(False), D.eval().requires_grad_(False)


def perturb(G, D):
    with torch.no_grad():
        for p in list(G.parameters()) + list(D.parameters()) + [G.mapping.w_avg]:
            p.add_(torch.randn_like(p) * 0.1)


def make_inputs(config):
    g, batch = config['G'], config['batch']
    r, channels = g['img_resolution'], g['img_channels']
    c = torch.zeros([batch, g['c_dim']])
    if g['c_dim'] > 0:
        c[torch.arange(batch), torch.randint(0, g['c_dim'], [batch])] = 1
    return {'in.z': torch.randn([batch, g['z_dim']]), 'in.c': c,
            'in.real': torch.rand([batch, channels, r, r]) * 2 - 1,
            'in.pl_noise': torch.randn([batch, channels, r, r]) / (r * r) ** 0.5}


def gradients(prefix, module, loss):
    params = [(name, p) for name, p in module.named_parameters()]
    grads = torch.autograd.grad(loss, [p for _, p in params], allow_unused=True)
    return {f'{prefix}.{name}': g.detach().clone() for (name, _), g in zip(params, grads) if g is not None}


def compute_entries(config, G, D, inputs):
    """Every output, loss and gradient entry of the format for these networks and inputs."""
    z, c, real, pl_noise = inputs['in.z'], inputs['in.c'], inputs['in.real'], inputs['in.pl_noise']
    softplus = torch.nn.functional.softplus
    out = {}
    with torch.no_grad():
        ws = G.mapping(z, c)
        ws_trunc = G.mapping(z, c, truncation_psi=config['truncation_psi'])
        out['out.ws'], out['out.ws_trunc07'] = ws, ws_trunc
        out['out.img'] = G.synthesis(ws, noise_mode='const')
        out['out.img_trunc07'] = G.synthesis(ws_trunc, noise_mode='const')
        out['out.logits_fake'], out['out.logits_real'] = D(out['out.img'], c), D(real, c)

    G.requires_grad_(True)
    loss = softplus(-D(G.synthesis(G.mapping(z, c), noise_mode='const'), c)).mean()
    out.update(gradients('grad.Gmain.G', G, loss))
    out['loss.Gmain'] = loss.detach()

    ws = G.mapping(z, c)
    img = G.synthesis(ws, noise_mode='const')
    pl_grads, = torch.autograd.grad((img * pl_noise).sum(), ws, create_graph=True)
    lengths = pl_grads.square().sum(2).mean(1).sqrt()
    pl_mean = torch.zeros([], dtype=lengths.dtype).lerp(lengths.mean(), config['pl_decay']).detach()
    loss = ((lengths - pl_mean).square() * config['pl_weight']).mean()
    out.update(gradients('grad.Gpl.G', G, loss))
    out['loss.pl_lengths'], out['loss.Gpl'] = lengths.detach(), loss.detach()
    G.requires_grad_(False)

    D.requires_grad_(True)
    loss = softplus(D(out['out.img'], c)).mean() + softplus(-D(real, c)).mean()
    out.update(gradients('grad.Dmain.D', D, loss))
    out['loss.Dmain'] = loss.detach()

    real_tmp = real.detach().requires_grad_(True)
    r1_grads, = torch.autograd.grad(D(real_tmp, c).sum(), real_tmp, create_graph=True)
    penalty = r1_grads.square().sum([1, 2, 3])
    loss = (penalty * (config['r1_gamma'] / 2)).mean()
    out.update(gradients('grad.Dr1.D', D, loss))
    out['loss.r1_penalty'], out['loss.Dr1'] = penalty.detach(), loss.detach()
    D.requires_grad_(False)
    return out


def relative_error(ours, expected):
    scale = expected.double().abs().max().item() if expected.numel() else 0.0
    diff = (ours.double() - expected.double()).abs().max().item() if expected.numel() else 0.0
    return diff / scale if scale > 0 else diff


def check(path):
    fixture = torch.load(path + '.pt')
    with open(path + '.json') as f:
        config = json.load(f)
    G, D = build_networks(config)
    G.load_state_dict({k[2:]: v for k, v in fixture.items() if k.startswith('G.')})
    D.load_state_dict({k[2:]: v for k, v in fixture.items() if k.startswith('D.')})
    ours = compute_entries(config, G, D, {k: v for k, v in fixture.items() if k.startswith('in.')})
    failures = 0
    for key in sorted(set(fixture) | set(ours)):
        if key.split('.')[0] in ('G', 'D', 'in'):
            continue
        if key not in ours or key not in fixture:
            print(f'FAIL  {key}: only in {"the fixture" if key in fixture else "this computation"}')
            failures += 1
            continue
        tolerance = 1e-3 if key.startswith('grad.') else 1e-4
        error = relative_error(ours[key], fixture[key])
        failures += error > tolerance
        print(f'{"ok  " if error <= tolerance else "FAIL"}  {key:<58} rel err {error:.3e}')
    print(f'{failures} failed')
    return 1 if failures else 0


def write(args):
    config = network_config(args)
    torch.manual_seed(args.seed)
    G, D = build_networks(config)
    perturb(G, D)
    inputs = make_inputs(config)
    entries = compute_entries(config, G, D, inputs)
    tensors = {f'G.{k}': v for k, v in G.state_dict().items()}
    tensors.update({f'D.{k}': v for k, v in D.state_dict().items()})
    tensors.update(inputs)
    tensors.update(entries)
    tensors = {k: v.detach().clone().contiguous() for k, v in tensors.items()}
    config['keys'] = {k: list(v.shape) for k, v in tensors.items()}
    config['G_params'] = sum(p.numel() for p in G.parameters())
    config['D_params'] = sum(p.numel() for p in D.parameters())
    torch.save(tensors, args.out + '.pt')
    with open(args.out + '.json', 'w') as f:
        json.dump(config, f, indent=1)
        f.write('\n')
    print(f'{args.out}.pt: {len(tensors)} tensors; G {config["G_params"]}, D {config["D_params"]} parameters')
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--ref', required=True, help='stylegan2-ada-pytorch checkout')
    parser.add_argument('--check', metavar='FIXTURE', help='FIXTURE.pt + FIXTURE.json to recompute and compare')
    parser.add_argument('--out', metavar='FIXTURE', help='write FIXTURE.pt and FIXTURE.json')
    parser.add_argument('--seed', type=int, default=0)
    for name, value in [('z-dim', 32), ('w-dim', 32), ('c-dim', 0), ('resolution', 16), ('channels', 1),
                        ('mapping-layers', 2), ('channel-base', 512), ('channel-max', 32), ('batch', 4),
                        ('mbstd-group-size', 4), ('mbstd-num-channels', 1)]:
        parser.add_argument('--' + name, type=int, default=value)
    parser.add_argument('--G.architecture', dest='G_architecture', default='skip', choices=['orig', 'skip', 'resnet'])
    parser.add_argument('--D.architecture', dest='D_architecture', default='resnet', choices=['orig', 'skip', 'resnet'])
    for name, value in [('r1-gamma', 10.0), ('pl-weight', 2.0), ('pl-decay', 0.01), ('truncation-psi', 0.7)]:
        parser.add_argument('--' + name, type=float, default=value)
    args = parser.parse_args()
    if bool(args.check) == bool(args.out):
        parser.error('give one of --check and --out')
    sys.path.insert(0, args.ref)
    provide_distutils()
    torch.set_num_threads(min(4, os.cpu_count() or 1))
    return check(args.check) if args.check else write(args)


if __name__ == '__main__':
    sys.exit(main())
