#!/usr/bin/python3
# bench/peers_train.py -- the PyTorch eager peers of bench_train: one training step (zero_grad,
# forward, loss.backward(), torch.optim.SGD(lr=0.05).step()) of the MLP of
# examples/train_mlp.cpp (2 -> 32 tanh -> 1, minibatch 64, MSE) and of a post-LN BERT encoder
# layer at [8,128,768] (nn.TransformerEncoderLayer: 12 heads, FFN 3072, erf GELU, dropout 0,
# batch_first, no mask; MSE against a fixed target), torch.set_num_threads(1). Same sampling and
# "@row" lines as bench/peers.py (table "training step", size = the rows of a minibatch). The loss
# must fall over a few steps before the timing, as in the C++ bench. Skipped with a note when
# torch is not importable.
import json
import math
import sys

from peers import measure, parse_args, row, set_threads

TABLE = "training step"
PEER = "PyTorch eager (autograd, optim.SGD)"


def note(text):
    print("@note " + json.dumps({"table": TABLE, "text": text}), flush=True)


def main():
    a, _ = parse_args()
    try:
        import torch
    except ImportError as e:
        note(f"PyTorch: skipped (torch is not importable by {sys.executable}: {e})")
        return 0
    note(f"PyTorch {torch.__version__} eager: autograd and torch.optim.SGD, "
         "one thread (torch's and OpenBLAS's)")
    torch.manual_seed(0)
    set_threads(1, torch)  # torch's pool and OpenBLAS's, which ignores torch's setting

    x = torch.rand(64, 2) * 2 - 1
    y = torch.sin(x[:, :1] * 2) * 0.8 + x[:, 1:] ** 2 * 0.6 - 0.2
    mlp = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    bert = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu",
                                            batch_first=True).train()
    xb = torch.randn(8, 128, 768)
    tb = torch.randn(8, 128, 768)

    ok = True
    for what, model, inputs, target, size, check_steps in (
            ("MLP 2-32-1, batch 64", mlp, x, y, 64, 20),
            ("BERT layer [8,128,768]", bert, xb, tb, 8 * 128, 3)):
        opt = torch.optim.SGD(model.parameters(), lr=0.05)

        def step():
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(model(inputs), target)
            loss.backward()
            opt.step()
            return float(loss.detach())

        losses = [step() for _ in range(check_steps)]
        print(f"check {what}: loss {losses[0]:.6g} -> {losses[-1]:.6g} over {check_steps} steps")
        if not (math.isfinite(losses[-1]) and losses[-1] < losses[0]):
            print(f"FAILED: {what}: the loss does not fall")
            ok = False
            continue
        samples, batch = measure(step, a.budget)
        row(PEER, 1, size, samples, batch, table=TABLE)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
