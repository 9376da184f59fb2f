#!/usr/bin/python3
# bench/peers_splat.py -- the numpy peer of bench_splat: tests/fixtures/make_splat.py's reference
# renderer (plain numpy, a Python loop per pixel and per listed Gaussian, one thread), timed on a
# scene of the C++ bench's density scaled down (--sizes N Gaussians at 64x64; the default 1562 is
# 100k per 512x512 image at the same Gaussians per pixel), and its time scaled by the pixel
# count to the C++ bench's 512x512 frame (the per-pixel work is the same at the same density).
# Forward only: the reference has no backward (its gradients are central differences).
import os
import sys

import numpy as np

import json

from peers import measure, parse_args, row

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests',
                                'fixtures'))
import make_splat  # noqa: E402

TABLE = "splat 512x512 forward"


def main():
    a, _ = parse_args("1562")
    size = 64
    scale = (512 * 512) / (size * size)
    for n in [int(float(s)) for s in a.sizes.split(",")]:
        r = np.random.default_rng(1)
        scene = dict(
            means=np.column_stack([r.uniform(-2.5, 2.5, (n, 2)), r.uniform(4.0, 8.0, n)]),
            log_scales=r.uniform(-4.5, -3.5, (n, 3)),
            rotations=r.normal(size=(n, 4)),
            opacity_logits=r.normal(size=n),
            colors_dc=r.normal(0.0, 0.5, (n, 3)),
            sh_rest=r.normal(0.0, 0.1, (n, 3, 3)))
        meta = make_splat.make_meta((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 1.0, 0.0), 50.0, 0.1,
                                    100.0, (0.1, 0.1, 0.1), size, size)
        attrs = dict(make_splat.DEFAULT_ATTRS, width=size, height=size)
        samples, batch = measure(lambda: make_splat.render(scene, meta, attrs), a.budget,
                                 min_samples=1, max_samples=3)
        row("numpy reference (scaled from 64x64)", 1, n * int(scale),
            [s * scale for s in samples], batch, table=TABLE)
    text = (f"the numpy reference renders {size}x{size} at the same density; its time is scaled "
            f"by {scale:g}")
    print("@note " + json.dumps({"table": TABLE, "text": text}), flush=True)


if __name__ == '__main__':
    main()
