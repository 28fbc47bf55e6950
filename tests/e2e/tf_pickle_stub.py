#!/usr/bin/env python3
"""A TensorFlow-form network pickle (stylegan2_export's) read the way the TensorFlow StyleGAN2 code's
pickling defines it - a dnnlib.tflib.network.Network object whose state is a dict - with a stand-in
class, so that no TensorFlow or reference code is needed. Checks what stylegan2-ada-pytorch's
legacy.load_network_pkl relies on (the (G, D, Gs) tuple, version, static_kwargs it knows, variables
as float32 numpy arrays under its names and shapes), then writes the networks again with Python's
own pickler, as the original pickles were written:

    OUT-p2.pkl, OUT-p5.pkl   protocols 2 and 5 (numpy's array pickles of each, memo, frames)
    OUT-ignored.pkl          with G static_kwargs the loader ignores (truncation_psi, structure)
    OUT-unknown.pkl          with an argument no loader knows (D's fused_modconv)

    PYTHONPATH=$(scripts/torch_wheel.sh) python3 tf_pickle_stub.py IN.pkl OUT
"""
import copy
import pickle
import sys
import types

import numpy as np

# The arguments legacy.load_network_pkl converts or ignores; any other makes it fail.
G_KWARGS = {'latent_size', 'label_size', 'dlatent_size', 'resolution', 'num_channels', 'mapping_layers', 'label_fmaps',
            'mapping_fmaps', 'mapping_nonlinearity', 'mapping_lrmul', 'w_avg_beta', 'fmap_base', 'fmap_max',
            'num_fp16_res', 'conv_clamp', 'architecture', 'resample_kernel', 'use_noise', 'nonlinearity',
            'truncation_psi', 'truncation_cutoff', 'style_mixing_prob', 'structure'}
D_KWARGS = {'label_size', 'resolution', 'num_channels', 'architecture', 'fmap_base', 'fmap_max', 'num_fp16_res',
            'conv_clamp', 'mapping_fmaps', 'nonlinearity', 'resample_kernel', 'freeze_layers', 'mapping_layers',
            'mapping_lrmul', 'mbstd_group_size', 'mbstd_num_features', 'structure'}


class Network:
    """Stands in for dnnlib.tflib.network.Network: its pickle is its state dict."""

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(state)


def register_stand_in():
    for name in ('dnnlib', 'dnnlib.tflib'):
        sys.modules.setdefault(name, types.ModuleType(name))
    module = types.ModuleType('dnnlib.tflib.network')
    module.Network = Network
    Network.__module__ = 'dnnlib.tflib.network'
    sys.modules['dnnlib.tflib.network'] = module


def variables(net, prefix=''):
    out = {prefix + name: value for name, value in net.variables}
    for name, component in net.components.items():
        out.update(variables(component, prefix + name + '/'))
    return out


def check(networks):
    assert isinstance(networks, tuple) and len(networks) == 3, type(networks)
    G, D, Gs = networks
    assert all(isinstance(n, Network) for n in networks)
    assert [n.name for n in networks] == ['G', 'D', 'Gs'], [n.name for n in networks]
    assert all(n.version >= 4 for n in networks)
    for net, known in ((G, G_KWARGS), (Gs, G_KWARGS), (D, D_KWARGS)):
        unknown = set(net.static_kwargs) - known
        assert not unknown, f'{net.name}: arguments the loader refuses: {unknown}'
    assert sorted(G.components) == ['mapping', 'synthesis'], sorted(G.components)
    for net in networks:
        for name, value in variables(net).items():
            assert isinstance(value, np.ndarray) and value.dtype == np.float32, (net.name, name, type(value))
    k, g = G.static_kwargs, variables(Gs)
    width = min(k['fmap_base'] * 2 // 4, k['fmap_max'])
    assert g['dlatent_avg'].shape == (k['dlatent_size'],)
    assert g['mapping/Dense0/weight'].shape == (k['latent_size'], k['dlatent_size'])  # [in, out]
    assert g['synthesis/4x4/Const/const'].shape == (1, width, 4, 4)
    assert g['synthesis/noise0'].shape == (1, 1, 4, 4)
    assert g['synthesis/4x4/Conv/weight'].shape == (3, 3, width, width)  # [kh, kw, in, out]
    if D.static_kwargs['label_size'] == 0:
        assert variables(D)['Output/weight'].shape == (width, 1)  # [in, out]


def main():
    source, out = sys.argv[1], sys.argv[2]
    register_stand_in()
    with open(source, 'rb') as f:
        networks = pickle.load(f)
    check(networks)
    for protocol in (2, 5):
        with open(f'{out}-p{protocol}.pkl', 'wb') as f:
            pickle.dump(networks, f, protocol=protocol)
    ignored = copy.deepcopy(networks)
    for net in (ignored[0], ignored[2]):
        net.static_kwargs.update(truncation_psi=0.5, structure='auto')
    with open(f'{out}-ignored.pkl', 'wb') as f:
        pickle.dump(ignored, f, protocol=4)
    unknown = copy.deepcopy(networks)
    unknown[1].static_kwargs['fused_modconv'] = True
    with open(f'{out}-unknown.pkl', 'wb') as f:
        pickle.dump(unknown, f, protocol=4)
    print(f'tf_pickle_stub: {source} has the form the legacy loader reads; wrote {out}-*.pkl')


if __name__ == '__main__':
    main()
