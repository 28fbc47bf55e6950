#!/usr/bin/env python3
"""Times the reference Python implementation (NVlabs stylegan2-ada-pytorch) on the same config and
phases as `stylegan2_bench`, for side-by-side numbers on one machine.

    python3 scripts/bench/reference_bench.py --ref /path/to/stylegan2-ada-pytorch \
        [--config configs/bench-cpu-32.yaml] [--threads 2] [--device cuda] [--batch-gpu N] \
        [--resolution 256 --channels 3] [--fp16-res 4 --conv-clamp 256]

Needs PyTorch (Debian: python3-torch, the same LibTorch the C++ build uses; on a GPU machine its
CUDA PyTorch), numpy and PyYAML, and a checkout of stylegan2-ada-pytorch (not shipped here). Runs
the reference's own Generator, Discriminator and StyleGAN2Loss; the step is the reference training
loop's (Gmain + Dmain every step, Greg every G_reg_interval, Dreg every D_reg_interval, each over
batch / batch_gpu accumulation rounds, then the G_ema update), on random uint8 images of the
configured shape, fetched as its loop does: one page-locked batch per step copied to the device, and
latents for every phase drawn at once on the device. On CUDA it
sets what the reference's training loop sets: cuDNN benchmark on, TF32 off, conv2d_gradfix on, and
it says whether the reference's CUDA plugins (upfirdn2d, bias_act) compiled or fell back.
"""
import argparse
import copy
import json
import math
import sys
import time
import warnings

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
        g_lr=get('optim', 'G_lr', 0.002), d_lr=get('optim', 'D_lr', 0.002),
        gamma=get('loss', 'r1_gamma', 10.0), pl_weight=get('loss', 'pl_weight', 2.0),
        g_reg=get('optim', 'G_reg_interval', 4), d_reg=get('optim', 'D_reg_interval', 16),
        resolution=get('data', 'resolution', 0) or 32, channels=get('data', 'channels', 0) or 1,
        g_fp16_res=get('G', 'num_fp16_res', 0), g_conv_clamp=get('G', 'conv_clamp', -1),
        d_fp16_res=get('D', 'num_fp16_res', 0), d_conv_clamp=get('D', 'conv_clamp', -1),
        batch_gpu=get('train', 'batch_gpu', 0), ema_kimg=get('train', 'ema_kimg', 10.0))


def register_plugins_by_name():
    """The reference's custom_ops.get_plugin builds its CUDA plugins (upfirdn2d, bias_act) with
    torch.utils.cpp_extension.load, then imports them by name. PyTorch of its time registered the
    module it loaded under that name; later ones (the 2.x of the GPU machines) only return it, so the
    import fails and the reference silently runs its slow fallback ops (stylegan2-ada-pytorch issue
    97). Registering the returned module, as older PyTorch did, lets the reference's own plugins load;
    its code is unchanged."""
    import torch.utils.cpp_extension as cpp_extension
    load = cpp_extension.load

    def load_and_register(name, *args, **kwargs):
        module = load(name, *args, **kwargs)
        sys.modules.setdefault(name, module)
        return module

    cpp_extension.load = load_and_register


def provide_distutils():
    """The reference's dnnlib imports distutils.util.strtobool. Python 3.12 has no distutils; where
    setuptools' stand-in is not installed either, a module with that one function takes its place."""
    try:
        import distutils.util  # noqa: F401
    except ImportError:
        import types

        def strtobool(value):
            value = value.lower()
            if value in ('y', 'yes', 't', 'true', 'on', '1'):
                return 1
            if value in ('n', 'no', 'f', 'false', 'off', '0'):
                return 0
            raise ValueError(f'invalid truth value {value!r}')

        util = types.ModuleType('distutils.util')
        util.strtobool = strtobool
        package = types.ModuleType('distutils')
        package.util = util
        sys.modules.update({'distutils': package, 'distutils.util': util})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--ref', required=True, help='stylegan2-ada-pytorch checkout')
    parser.add_argument('--config', default='configs/bench-cpu-32.yaml')
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--warmup', type=int, default=2)
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--device', default='cpu', help='cpu or cuda')
    parser.add_argument('--batch-gpu', type=int, default=None, help='images per accumulation round (default: the '
                        "config's train.batch_gpu, else the whole batch)")
    parser.add_argument('--batch', type=int, default=None, help="override the config's train.batch")
    parser.add_argument('--channel-base', type=int, default=None, help="override the config's G/D.channel_base")
    parser.add_argument('--resolution', type=int, default=None, help="override the config's data.resolution")
    parser.add_argument('--channels', type=int, default=None, help="override the config's data.channels")
    parser.add_argument('--fp16-res', type=int, default=None, help="num_fp16_res (default: the config's G.num_fp16_res)")
    parser.add_argument('--conv-clamp', type=float, default=None, help="conv_clamp (default: the config's; < 0: none)")
    parser.add_argument('--nhwc', action='store_true', help="the float16 blocks channels_last (the reference's "
                        "fp16_channels_last, train.py --nhwc=1; default: NCHW, its default)")
    parser.add_argument('--jsonl', default=None, help='append the result to this file as one JSON object (as '
                        "stylegan2_bench's training record: kind, step_s, img_per_s, s_per_kimg, phases, ...), "
                        'for scripts')
    parser.add_argument('--build-plugins', action='store_true', help="build the reference's CUDA plugins into "
                        'TORCH_EXTENSIONS_DIR, say whether they load, and exit (started early in the background, '
                        'it spares the timed run their build)')
    args = parser.parse_args()
    sys.path.insert(0, args.ref)
    register_plugins_by_name()
    provide_distutils()
    from training.networks import Generator, Discriminator  # noqa: E402 (from the reference checkout)
    from training.loss import StyleGAN2Loss  # noqa: E402
    from torch_utils.ops import bias_act, conv2d_gradfix, upfirdn2d  # noqa: E402
    # Said once (gradfix_status reports it): warned per convolution, it made a 6 MB log per run.
    warnings.filterwarnings('once', message='conv2d_gradfix not supported')

    def plugin_status():
        return 'CUDA plugins: upfirdn2d %s, bias_act %s' % (
            'compiled' if upfirdn2d._plugin is not None else 'fell back to reference ops',
            'compiled' if bias_act._plugin is not None else 'fell back to reference ops')

    def gradfix_status(device):  # the reference's own choice for a convolution on device
        if conv2d_gradfix._should_use_custom_op(torch.empty(0, device=device)):
            return 'conv2d_gradfix on'
        return f'conv2d_gradfix off (torch {torch.__version__}: F.conv2d, as the reference falls back)'

    if args.build_plugins:
        upfirdn2d._init()
        bias_act._init()
        print(f'reference stylegan2-ada-pytorch, torch {torch.__version__}: {plugin_status()}')
        return
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    c = load_config(args.config)
    for keys, value in [(['batch'], args.batch), (['g_base', 'd_base'], args.channel_base),
                        (['resolution'], args.resolution), (['channels'], args.channels),
                        (['g_fp16_res', 'd_fp16_res'], args.fp16_res), (['g_conv_clamp', 'd_conv_clamp'], args.conv_clamp),
                        (['batch_gpu'], args.batch_gpu)]:
        for key in keys if value is not None else []:
            c[key] = value
    device = torch.device(args.device)
    if device.type == 'cuda':  # as the reference's training loop
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        conv2d_gradfix.enabled = True
    clamp = {net: c[net + '_conv_clamp'] if c[net + '_conv_clamp'] is not None and c[net + '_conv_clamp'] >= 0 else None
             for net in ('g', 'd')}
    G = Generator(z_dim=c['z_dim'], c_dim=0, w_dim=c['w_dim'], img_resolution=c['resolution'],
                  img_channels=c['channels'], mapping_kwargs=dict(num_layers=c['map']),
                  synthesis_kwargs=dict(channel_base=c['g_base'], channel_max=c['g_max'], num_fp16_res=c['g_fp16_res'],
                                        conv_clamp=clamp['g'], fp16_channels_last=args.nhwc)
                  ).train().requires_grad_(False).to(device)
    D = Discriminator(c_dim=0, img_resolution=c['resolution'], img_channels=c['channels'],
                      channel_base=c['d_base'], channel_max=c['d_max'], num_fp16_res=c['d_fp16_res'],
                      conv_clamp=clamp['d'], block_kwargs=dict(fp16_channels_last=args.nhwc),
                      epilogue_kwargs=dict(mbstd_group_size=c['mbstd'])).train().requires_grad_(False).to(device)
    loss = StyleGAN2Loss(device=device, G_mapping=G.mapping, G_synthesis=G.synthesis, D=D,
                         r1_gamma=c['gamma'], pl_weight=c['pl_weight'])
    phases = []
    for name, module, lr, interval in [('G', G, c['g_lr'], c['g_reg']), ('D', D, c['d_lr'], c['d_reg'])]:
        if not interval:  # as the reference without lazy regularization: one phase, main and reg together
            opt = torch.optim.Adam(module.parameters(), lr=lr, betas=[0.0, 0.99], eps=1e-8)
            phases += [(name + 'both', module, opt, 1)]
            continue
        ratio = interval / (interval + 1)
        opt = torch.optim.Adam(module.parameters(), lr=lr * ratio, betas=[0.0, 0.99 ** ratio], eps=1e-8)
        phases += [(name + 'main', module, opt, 1), (name + 'reg', module, opt, interval)]

    batch = c['batch']
    batch_gpu = c['batch_gpu'] if c['batch_gpu'] and c['batch_gpu'] != 'auto' else batch
    real_c = torch.zeros([batch_gpu, 0], device=device)
    # Random images as the reference's data loader hands them over: uint8, page-locked on CUDA.
    images = [torch.randint(0, 256, [batch, c['channels'], c['resolution'], c['resolution']], dtype=torch.uint8)
              for _ in range(2)]
    if device.type == 'cuda':
        images = [image.pin_memory() for image in images]

    def fetch(batch_idx):  # as the reference's loop, once per step: its real batch and every phase's latents
        real = (images[batch_idx % len(images)].to(device).to(torch.float32) / 127.5 - 1).split(batch_gpu)
        z = torch.randn([len(phases) * batch, c['z_dim']], device=device).split(batch)
        return real, [phase_z.split(batch_gpu) for phase_z in z]

    def run_phase(phase, real, z):
        name, module, opt, interval = phase
        opt.zero_grad(set_to_none=True)
        module.requires_grad_(True)
        for real_round, z_round in zip(real, z):
            loss.accumulate_gradients(phase=name, real_img=real_round, real_c=real_c, gen_z=z_round, gen_c=real_c,
                                      sync=True, gain=interval)
        module.requires_grad_(False)
        for p in module.parameters():
            if p.grad is not None:
                torch.nan_to_num(p.grad, nan=0, posinf=1e5, neginf=-1e5, out=p.grad)
        opt.step()

    G_ema = copy.deepcopy(G).eval()
    ema_beta = 0.5 ** (batch / max(c['ema_kimg'] * 1000, 1e-8))

    def update_ema():  # as the reference's training loop, after every step
        with torch.no_grad():
            for p_ema, p in zip(G_ema.parameters(), G.parameters()):
                p_ema.copy_(p.lerp(p_ema, ema_beta))
            for b_ema, b in zip(G_ema.buffers(), G.buffers()):
                b_ema.copy_(b)

    def step(batch_idx):
        real, z = fetch(batch_idx)
        for phase, phase_z in zip(phases, z):
            if batch_idx % phase[3] == 0:
                run_phase(phase, real, phase_z)
        update_ema()

    def timed(body):
        if device.type == 'cuda':
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        body()
        if device.type == 'cuda':
            torch.cuda.synchronize(device)
        return time.perf_counter() - start

    for i in range(args.warmup):
        step(i)
    print(f'reference stylegan2-ada-pytorch, torch {torch.__version__}, device {device}, {args.threads} threads, '
          f'batch {batch} in rounds of {batch_gpu}, resolution {c["resolution"]}, num_fp16_res G {c["g_fp16_res"]} '
          f'D {c["d_fp16_res"]}, conv_clamp G {clamp["g"]} D {clamp["d"]}, '
          f'{"float16 blocks channels_last" if args.nhwc else "NCHW"}' + (f', {plugin_status()}; {gradfix_status(device)}' if device.type == 'cuda' else ''))
    print(f'{"phase":<10} {"ms/call":>10} {"img/s":>10}')
    real, z = fetch(0)
    phase_records = []
    for phase, phase_z in zip(phases, z):
        seconds = timed(lambda: [run_phase(phase, real, phase_z) for _ in range(args.repeats)]) / args.repeats
        print(f'{phase[0]:<10} {seconds * 1e3:>10.1f} {batch / seconds:>10.2f}')
        phase_records.append({'name': phase[0], 's': seconds})
    cycle = math.lcm(c['g_reg'] or 1, c['d_reg'] or 1)
    if device.type == 'cuda':
        torch.cuda.reset_peak_memory_stats(device)
    seconds = timed(lambda: [step(i) for i in range(cycle)]) / cycle
    print(f'step       {seconds * 1e3:>10.1f} {batch / seconds:>10.2f}   (mean of {cycle} steps)')
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == 'cuda' else 0.0
    print(f'throughput {batch / seconds:.2f} img/s, {1000 * seconds / batch:.2f} s/kimg; '
          f'peak device memory {peak:.2f} GiB')
    if args.jsonl:
        plugins_fell_back = device.type == 'cuda' and (upfirdn2d._plugin is None or bias_act._plugin is None)
        record = {'kind': 'train', 'implementation': 'stylegan2-ada-pytorch', 'torch': torch.__version__,
                  'device': str(device), 'threads': args.threads, 'channels_last': args.nhwc, 'resolution': c['resolution'],
                  'global_batch': batch, 'rank_batch': batch, 'batch_gpu': batch_gpu, 'timed_steps': cycle,
                  'step_s': seconds, 'img_per_s': batch / seconds, 's_per_kimg': 1000 * seconds / batch,
                  'phases': phase_records, 'peak_device_gib': peak, 'plugins_fell_back': plugins_fell_back}
        with open(args.jsonl, 'a') as f:
            f.write(json.dumps(record) + '\n')


if __name__ == '__main__':
    main()
