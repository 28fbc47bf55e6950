#!/usr/bin/env bash
# PNG decoding through the training loader (stylegan2_dataset bench: read from the ZIP, both CRCs,
# inflate, unfilter, planar copy, batch, mirror), per core: ZIPs of 256x256 and 1024x1024 RGB PNGs
# that look like photographs to PNG's predictor (Fashion-MNIST images upscaled and blended 30 %
# with Gaussian noise), saved by Pillow at compress_level 0 (stylegan2-ada-pytorch's dataset_tool),
# 1 (stylegan2_dataset create) and 6, and Fashion-MNIST rendered at 256 by stylegan2_dataset create.
# Needs /usr/bin/python3 with Pillow (Debian: python3-pil) and the Fashion-MNIST files.
#   scripts/bench/png_decode.sh [COUNT_256] [COUNT_1024]
set -euo pipefail
cd "$(dirname "$0")/../.."
count256=${1:-600}
count1024=${2:-60}
bin=${BUILD_DIR:-build}/bin
fmnist=/usr/share/datasets/fashion-mnist
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

make_zips() {  # make_zips RESOLUTION COUNT: $work/photoR-lL.zip for L in 0 1 6
  /usr/bin/python3 - "$1" "$2" "$work" "$fmnist" << 'EOF_PY'
import gzip, io, struct, sys, zipfile
from PIL import Image
res, count, work, fmnist = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
with gzip.open(f'{fmnist}/train-images-idx3-ubyte.gz') as f:
    data = f.read()
_, n, h, w = struct.unpack('>IIII', data[:16])
zips = {level: zipfile.ZipFile(f'{work}/photo{res}-l{level}.zip', 'w', zipfile.ZIP_STORED) for level in (0, 1, 6)}
for i in range(count):
    base = Image.frombytes('L', (w, h), data[16 + i * h * w:16 + (i + 1) * h * w]).resize((res, res), Image.BICUBIC)
    rgb = Image.merge('RGB', [base, base.rotate(5), base.transpose(Image.FLIP_LEFT_RIGHT)])
    noise = Image.merge('RGB', [Image.effect_noise((res, res), 40) for _ in range(3)])
    image = Image.blend(rgb, noise, 0.3)
    for level, archive in zips.items():
        encoded = io.BytesIO()
        image.save(encoded, format='png', compress_level=level, optimize=False)
        archive.writestr(f'{i // 1000:05d}/img{i:08d}.png', encoded.getvalue())
for archive in zips.values():
    archive.close()
EOF_PY
}

bench() {  # bench ZIP WORKERS BATCH BATCHES
  "$bin/stylegan2_dataset" bench "$1" --workers "$2" --batch "$3" --batches "$4" | tail -n 1
}

make_zips 256 "$count256"
make_zips 1024 "$count1024"
"$bin/stylegan2_dataset" create --source "$fmnist" --max-images "$count256" --resolution 256 --channels 3 \
    --dest "$work/fashion256.zip" > /dev/null
for level in 0 1 6; do
  for workers in 1 2; do bench "$work/photo256-l$level.zip" "$workers" 32 60; done
  bench "$work/photo1024-l$level.zip" 1 8 20
done
bench "$work/fashion256.zip" 1 32 60
