"""The bench CNN's convolutions one by one (forward, input gradient, weight gradient), nbflow
against PyTorch's oneDNN on the same shapes, each framework in its own fresh process.

    python bench/conv_layers.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from machine import openblas  # noqa: E402
from real_models import in_fresh_process, time_steps  # noqa: E402

# (name, N, C_in, C_out, H, kernel, stride, padding): the layers of bench/models.py's cnn
LAYERS = [
    ("stem 3->32", 32, 3, 32, 32, 3, 1, 1),
    ("block1 32->32", 32, 32, 32, 32, 3, 1, 1),
    ("block2 32->64 s2", 32, 32, 64, 32, 3, 2, 1),
    ("block2 64->64", 32, 64, 64, 16, 3, 1, 1),
    ("shortcut 1x1 s2", 32, 32, 64, 32, 1, 2, 0),
]
PARTS = ("forward", "input grad", "weight grad")


def arrays(n, c_in, c_out, h, k, stride, padding):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c_in, h, h)).astype(np.float32)
    w = rng.standard_normal((c_out, c_in, k, k)).astype(np.float32)
    oh = (h + 2 * padding - k) // stride + 1
    g = rng.standard_normal((n, c_out, oh, oh)).astype(np.float32)
    return x, w, g


def nbflow_times(layer):
    import nbflow as nb
    from nbflow.ops import conv

    _, *shape = layer
    x, w, g = (nb.tensor(a) for a in arrays(*shape))
    geometry = {"stride": (shape[5],), "padding": (shape[6],), "dilation": (1,), "groups": 1}
    return [
        time_steps(lambda: conv.conv2d_op(x, w, **geometry)),
        time_steps(lambda: conv.conv2d_input_grad(g, w, x, **geometry)),
        time_steps(lambda: conv.conv2d_weight_grad(x, g, w, **geometry)),
    ]


def torch_times(layer):
    import torch

    _, *shape = layer
    x, w, g = (torch.from_numpy(a) for a in arrays(*shape))
    stride, padding = shape[5], shape[6]

    def backward(mask):
        return torch.ops.aten.convolution_backward(
            g, x, w, None, [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], 1, mask
        )

    with torch.no_grad():
        return [
            time_steps(lambda: torch.nn.functional.conv2d(x, w, None, stride, padding)),
            time_steps(lambda: backward([True, False, False])),
            time_steps(lambda: backward([False, True, False])),
        ]


def child(peer):
    fn = nbflow_times if peer == "nbflow" else torch_times
    print(json.dumps([fn(layer) for layer in LAYERS]))


def run(peer):
    return np.array(in_fresh_process("conv_layers", f"child({peer!r})"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(openblas() + "\n")
    runs = {"nbflow": [], "torch": []}
    for _ in range(args.rounds):
        for peer in runs:
            runs[peer].append(run(peer))
    ours, theirs = (np.median(runs[p], axis=0) for p in ("nbflow", "torch"))
    print("| layer | part | nbflow ms | PyTorch ms | ratio | nbflow GFLOP/s |")
    print("|---|---|---|---|---|---|")
    for i, (name, n, c_in, c_out, h, k, stride, padding) in enumerate(LAYERS):
        oh = (h + 2 * padding - k) // stride + 1
        flop = 2 * n * c_out * oh * oh * c_in * k * k
        for j, part in enumerate(PARTS):
            a, b = ours[i, j], theirs[i, j]
            print(f"| {name} | {part} | {a:.2f} | {b:.2f} | {a / b:.2f}x | {flop / a / 1e6:.0f} |")
    total_ours, total_theirs = ours.sum(), theirs.sum()
    print(
        f"| all | all | {total_ours:.2f} | {total_theirs:.2f} | "
        f"{total_ours / total_theirs:.2f}x | |"
    )


if __name__ == "__main__":
    main()
