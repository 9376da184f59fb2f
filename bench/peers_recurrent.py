#!/usr/bin/python3
# bench/peers_recurrent.py -- the PyTorch peer of bench_recurrent: torch.nn.LSTM inference (1
# layer, hidden 256, input 256, batch 8, seq 128, f32, batch first, under no_grad) on the C++
# bench's inputs, torch.set_num_threads(n), sampled by its rule (peers.py: measure), printed as
# "@row" lines. Its output is checked against the same LSTM in float64 first.
import json
import sys

from peers import measure, parse_args, row, set_threads, weyl

TABLE = "lstm inference"
B, S, I, H = 8, 128, 256, 256


def note(text):
    print("@note " + json.dumps({"table": TABLE, "text": text}), flush=True)


def scaled(n, salt, scale, np):
    return weyl(n, salt, np) * np.float32(scale)


def main():
    a, threads = parse_args()
    try:
        import numpy as np
        import torch
    except ImportError as e:
        note(f"PyTorch: skipped ({e})")
        return 0
    x = scaled(B * S * I, 0, 0.25, np).reshape(B, S, I)
    w_ih = scaled(4 * H * I, 1, 1 / 64, np).reshape(4 * H, I)
    w_hh = scaled(4 * H * H, 2, 1 / 64, np).reshape(4 * H, H)
    bias = scaled(4 * H, 3, 1 / 64, np)

    def module(dtype):
        m = torch.nn.LSTM(I, H, num_layers=1, batch_first=True, dtype=dtype)
        with torch.no_grad():
            m.weight_ih_l0.copy_(torch.from_numpy(w_ih))
            m.weight_hh_l0.copy_(torch.from_numpy(w_hh))
            m.bias_ih_l0.copy_(torch.from_numpy(bias))
            m.bias_hh_l0.zero_()
        return m.eval()

    m32, m64 = module(torch.float32), module(torch.float64)
    xt = torch.from_numpy(x)
    with torch.no_grad():
        ref = m64(xt.double())[0].numpy()
    note(f"PyTorch {torch.__version__}: torch.nn.LSTM, CPU kernel, no_grad")
    ok = True
    for t in threads:
        set_threads(t, torch)

        def fn():
            with torch.no_grad():
                return m32(xt)[0]

        diff = float(np.max(np.abs(fn().numpy().astype(np.float64) - ref)))
        print(f"check {TABLE} threads={t} PyTorch: max|y-f64 ref| = {diff:.3g}")
        if not diff <= 1e-4:
            print("FAILED: PyTorch is off by more than 1e-4")
            ok = False
            continue
        samples, batch = measure(fn, a.budget)
        row("PyTorch nn.LSTM", t, B * S * H, samples, batch, TABLE)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
