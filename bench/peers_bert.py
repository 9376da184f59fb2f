#!/usr/bin/python3
# bench/peers_bert.py -- the PyTorch peers of bench_bert: one post-LN BERT encoder layer
# (nn.TransformerEncoderLayer: 12 heads, erf GELU, batch_first, dropout 0, eval, a padding mask
# of ones) at [4,15,384] (FFN 1536) and [8,128,768] (FFN 3072), forward under no_grad, eager and
# torch.jit.trace + torch.jit.freeze, on 1 and 2 threads (peers.set_threads). Same sampling and
# "@row" lines as bench/peers.py (table "bert layer", size = batch x sequence). Skipped with a
# note when torch is not importable.
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (measure, row)

peers.TABLE = "bert layer"


def note(text):
    print("@note " + json.dumps({"table": peers.TABLE, "text": text}), flush=True)


def main():
    a, threads = peers.parse_args()
    try:
        import torch
    except ImportError as e:
        note(f"PyTorch: skipped (torch is not importable by {sys.executable}: {e})")
        return 0
    note(f"PyTorch {torch.__version__}: nn.TransformerEncoderLayer, eager and "
         "torch.jit.trace + freeze, torch.set_num_threads(n) and OpenBLAS's threads")
    torch.manual_seed(0)

    class Masked(torch.nn.Module):  # jit.trace takes tensors only: the mask as an argument
        def __init__(self, layer):
            super().__init__()
            self.layer = layer

        def forward(self, x, pad):
            return self.layer(x, src_key_padding_mask=pad)

    for b, s, d, f in ((4, 15, 384, 1536), (8, 128, 768, 3072)):
        layer = torch.nn.TransformerEncoderLayer(d, 12, f, dropout=0.0, activation="gelu",
                                                 batch_first=True).eval()
        x = torch.randn(b, s, d)
        pad = torch.zeros(b, s, dtype=torch.bool)  # no padding: every token attends
        with torch.no_grad():
            frozen = torch.jit.freeze(torch.jit.trace(Masked(layer).eval(), (x, pad)))
            for name, fn in (("PyTorch eager", lambda: layer(x, src_key_padding_mask=pad)),
                             ("PyTorch jit.trace+freeze", lambda: frozen(x, pad))):
                for t in threads:
                    peers.set_threads(t, torch)
                    samples, batch = peers.measure(fn, a.budget)
                    peers.row(name, t, b * s, samples, batch, table=peers.TABLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
