#!/usr/bin/env python3
"""Exports NVIDIA's StyleGAN2 network pickles to what stylegan2_import reads: a torch.save'd flat
dict of G.<name>, D.<name> and G_ema.<name> tensors (float32) and a JSON with the network options.

Run it where stylegan2-ada-pytorch works (its dnnlib, torch_utils and legacy modules importable:
pass the checkout with --repo). legacy.load_network_pkl also converts the TensorFlow pickles of
the original StyleGAN2.

  python3 scripts/export_pkl.py --repo ~/stylegan2-ada-pytorch --pkl ffhq.pkl --out ffhq
  build/bin/stylegan2_import --state-dict ffhq.pt --config ffhq.json --out ffhq-snapshot.pt
"""
import argparse
import json
import os
import sys


def generator_options(G):
    kwargs = getattr(G, "init_kwargs", {})
    mapping = kwargs.get("mapping_kwargs", {})
    synthesis = kwargs.get("synthesis_kwargs", {})
    conv_clamp = synthesis.get("conv_clamp")
    return {
        "z_dim": G.z_dim, "c_dim": G.c_dim, "w_dim": G.w_dim,
        "img_resolution": G.img_resolution, "img_channels": G.img_channels,
        "mapping_layers": G.mapping.num_layers,
        "mapping_lr_multiplier": mapping.get("lr_multiplier", 0.01),
        "w_avg_beta": G.mapping.w_avg_beta if G.mapping.w_avg_beta is not None else 0.995,
        "channel_base": synthesis.get("channel_base", 32768),
        "channel_max": synthesis.get("channel_max", 512),
        "architecture": synthesis.get("architecture", "skip"),
        "conv_clamp": -1 if conv_clamp is None else conv_clamp,
        "num_fp16_res": synthesis.get("num_fp16_res", 0),  # the pickle's float16 blocks compute in float16
    }


def discriminator_options(D):
    kwargs = getattr(D, "init_kwargs", {})
    epilogue = kwargs.get("epilogue_kwargs", {})
    mapping = kwargs.get("mapping_kwargs", {})
    conv_clamp = kwargs.get("conv_clamp")
    return {
        "c_dim": D.c_dim, "img_resolution": D.img_resolution, "img_channels": D.img_channels,
        "architecture": kwargs.get("architecture", "resnet"),
        "channel_base": kwargs.get("channel_base", 32768),
        "channel_max": kwargs.get("channel_max", 512),
        "mbstd_group_size": epilogue.get("mbstd_group_size", 4),  # None (the whole batch) stays null
        "mbstd_num_channels": epilogue.get("mbstd_num_channels", 1),
        "cmap_dim": kwargs.get("cmap_dim"),  # None: the channels at 4x4
        "mapping_layers": mapping.get("num_layers", 8),
        "mapping_lr_multiplier": mapping.get("lr_multiplier", 0.01),
        "conv_clamp": -1 if conv_clamp is None else conv_clamp,
        "num_fp16_res": kwargs.get("num_fp16_res", 0),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", help="stylegan2-ada-pytorch checkout (added to sys.path)")
    parser.add_argument("--pkl", required=True, help="network pickle (.pkl) with G, D and G_ema")
    parser.add_argument("--out", required=True, help="output prefix: writes OUT.pt and OUT.json")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing OUT.pt or OUT.json")
    args = parser.parse_args()
    existing = [path for path in (args.out + ".pt", args.out + ".json") if os.path.exists(path)]
    if existing and not args.overwrite:
        sys.exit(f"export_pkl: {existing[0]} exists; pass --overwrite to replace it, or choose another --out")
    if os.path.abspath(args.out + ".pt") == os.path.abspath(args.pkl):
        sys.exit(f"export_pkl: --out {args.out} would write over the pickle it reads")
    if args.repo:
        sys.path.insert(0, args.repo)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench"))
    from reference_bench import provide_distutils  # dnnlib imports distutils, which Python 3.12 lacks
    provide_distutils()
    import torch
    import legacy  # stylegan2-ada-pytorch

    with open(args.pkl, "rb") as f:
        networks = legacy.load_network_pkl(f)
    tensors = {}
    for name in ("G", "D", "G_ema"):
        if name in networks:
            for key, value in networks[name].state_dict().items():
                tensors[f"{name}.{key}"] = value.detach().cpu().float().contiguous()
    G = networks.get("G_ema", networks.get("G"))
    if G is None or "D" not in networks:  # legacy.load_network_pkl itself asks for all three
        sys.exit(f"export_pkl: {args.pkl} lacks G/G_ema or D (has {sorted(networks)})")
    config = {"G": generator_options(G), "D": discriminator_options(networks["D"]), "source": args.pkl}
    torch.save(tensors, args.out + ".pt")
    with open(args.out + ".json", "w") as f:
        json.dump(config, f, indent=1)
    print(f"wrote {args.out}.pt ({len(tensors)} tensors) and {args.out}.json")


if __name__ == "__main__":
    main()
