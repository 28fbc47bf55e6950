#!/usr/bin/python3
"""`stylegan2_dataset create --resolution R --filter box|lanczos` against Pillow, which
stylegan2-ada-pytorch's dataset_tool resizes with: textured RGB images that need a crop to a square
(wide and tall), an upscale and an odd size, each center-cropped as the dataset_tool crops and
resized by Pillow, must come out byte for byte as our ZIP holds them.

    check_resize_pil.py WORK_DIR STYLEGAN2_DATASET
"""
import io
import os
import subprocess
import sys
import zipfile

from PIL import Image

RESOLUTION = 16
SIZES = {'a_wide.png': (48, 40), 'b_tall.png': (40, 56), 'c_small.png': (12, 12), 'd_odd.png': (33, 35)}
FILTERS = {'lanczos': Image.LANCZOS, 'box': Image.BOX}


def textured(width, height, seed):
    """A deterministic RGB texture: a gradient plus a linear congruential pattern (edges and noise)."""
    state, data = seed, bytearray()
    for y in range(height):
        for x in range(width):
            state = (state * 1103515245 + 12345) % 2**31
            data += bytes(((x * 255 // width + (state >> 16) % 64) % 256, (y * 255 // height) ^ (state >> 8) % 256,
                           255 if (x // 3 + y // 5) % 2 else 0))
    return Image.frombytes('RGB', (width, height), bytes(data))


def center_crop(image):  # dataset_tool's center-crop: the largest centred square
    width, height = image.size
    side = min(width, height)
    left, top = (width - side) // 2, (height - side) // 2
    return image.crop((left, top, left + side, top + side))


def main():
    work, dataset_bin = sys.argv[1], sys.argv[2]
    source = os.path.join(work, 'pil-src')
    os.makedirs(source, exist_ok=True)
    for seed, (name, size) in enumerate(sorted(SIZES.items())):
        textured(*size, seed + 1).save(os.path.join(source, name))
    failures = 0
    for filter_name, pil_filter in FILTERS.items():
        dest = os.path.join(work, f'pil-{filter_name}.zip')
        subprocess.run([dataset_bin, 'create', '--source', source, '--dest', dest, '--resolution', str(RESOLUTION),
                        '--filter', filter_name, '--no-shuffle'], check=True, stdout=subprocess.DEVNULL)
        with zipfile.ZipFile(dest) as archive:
            pngs = sorted(n for n in archive.namelist() if n.endswith('.png'))
            ours = [Image.open(io.BytesIO(archive.read(n))).convert('RGB') for n in pngs]
        assert len(ours) == len(SIZES), f'{dest}: {len(ours)} images, expected {len(SIZES)}'
        for name, image in zip(sorted(SIZES), ours):
            expected = center_crop(Image.open(os.path.join(source, name))).resize((RESOLUTION, RESOLUTION),
                                                                                   pil_filter)
            differing = sum(a != b for a, b in zip(image.tobytes(), expected.tobytes()))
            largest = max(abs(a - b) for a, b in zip(image.tobytes(), expected.tobytes()))
            status = 'ok' if differing == 0 else 'FAIL'
            failures += differing != 0
            print(f'{status}: {filter_name} {name} {SIZES[name]}: {differing} of {len(expected.tobytes())} bytes differ '
                  f'from Pillow {Image.__version__} (largest by {largest})')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
