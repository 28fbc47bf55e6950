#!/usr/bin/python3
"""What stylegan2_generate's style mixing and interpolation show, checked against single renders of
the same seeds (all with the same truncation and const noise):

  - stylemix.png: a blank corner, the column seeds along the top, the row seeds down the left;
  - stylemix-all.png (styles covering every w): each mixed cell is its column's image;
  - interpolation frames 0, F, 2F, ... are the key seeds' images.

Images rendered in different batches may differ by rounding (1 of 255 in a few pixels).

    check_generate_grids.py DIR RESOLUTION ROW_SEEDS COLUMN_SEEDS FRAMES_PER_STEP
      DIR holds seeds/seedNNNN.png, mix/stylemix.png, mix-all/stylemix.png, frames/frameNNNNN.png
"""
import os
import sys

from PIL import Image

TOLERANCE = 1  # of 255, per channel


def pixels(image):
    return image.convert('RGB').tobytes()


def same(a, b):
    return len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) <= TOLERANCE


def cell(grid, row, column, side):
    return pixels(grid.crop((column * side, row * side, (column + 1) * side, (row + 1) * side)))


def main():
    folder, side = sys.argv[1], int(sys.argv[2])
    rows, columns = [int(s) for s in sys.argv[3].split(',')], [int(s) for s in sys.argv[4].split(',')]
    frames_per_step = int(sys.argv[5])
    seed = {s: pixels(Image.open(os.path.join(folder, 'seeds', f'seed{s:04d}.png'))) for s in rows + columns}
    failures = []

    def expect(condition, what):
        print(('ok: ' if condition else 'FAIL: ') + what)
        if not condition:
            failures.append(what)

    mix = Image.open(os.path.join(folder, 'mix', 'stylemix.png'))
    expect(mix.size == (side * (len(columns) + 1), side * (len(rows) + 1)), f'stylemix.png is {mix.size}')
    expect(not any(cell(mix, 0, 0, side)), 'its corner is blank')
    for c, s in enumerate(columns):
        expect(same(cell(mix, 0, c + 1, side), seed[s]), f'top cell {c + 1} is seed {s}')
    for r, s in enumerate(rows):
        expect(same(cell(mix, r + 1, 0, side), seed[s]), f'left cell {r + 1} is seed {s}')
        for c, column in enumerate(columns):
            mixed = cell(mix, r + 1, c + 1, side)
            expect(not same(mixed, seed[s]) and not same(mixed, seed[column]),
                   f'cell ({r + 1}, {c + 1}) mixes seeds {s} and {column}: neither alone')
    every = Image.open(os.path.join(folder, 'mix-all', 'stylemix.png'))
    for r, s in enumerate(rows):
        for c, column in enumerate(columns):
            expect(same(cell(every, r + 1, c + 1, side), seed[column]),
                   f'with every style from the column, cell ({r + 1}, {c + 1}) is seed {column}')
    for k, s in enumerate(rows):
        frame = pixels(Image.open(os.path.join(folder, 'frames', f'frame{k * frames_per_step:05d}.png')))
        expect(same(frame, seed[s]), f'frame {k * frames_per_step} is seed {s}')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
