"""Train a sequence classifier on variable-length data in graph mode.

Each example is a sequence of 1 to 12 tokens from {a, b, c}, padded to 12 with random tokens;
its label says whether it holds more a's than b's. An LSTM runs over each sequence for its own
length (nbflow.nn.dynamic_rnn: one while_loop in the Program), and a linear layer classifies
its final state. Counting what the padding holds would give wrong answers, so the model only
learns if lengths are honoured.

The Program is built once with the static API: embedding -> dynamic LSTM -> linear ->
cross_entropy, then Adam's minimize appends the backward pass (a while_grad loop running the
LSTM's gradient back over the steps) and the in-place updates. An Executor runs it per batch;
evaluation fetches only the logits, so pruning drops the backward and the updates.

    python examples/train_sequence_graph.py [--steps 300]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import nbflow as nb
from nbflow import nn

MAX_LEN, TOKENS = 12, 3


def make_data(n: int, seed: int):
    """(tokens (MAX_LEN, n) time-major, lengths (n,), labels (n,)): more a's (0) than b's (1)?"""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, TOKENS, size=(MAX_LEN, n))
    lengths = rng.integers(1, MAX_LEN + 1, size=n)
    inside = np.arange(MAX_LEN)[:, None] < lengths[None, :]
    a = np.sum((tokens == 0) & inside, axis=0)
    b = np.sum((tokens == 1) & inside, axis=0)
    return tokens, lengths, (a > b).astype(np.int64)


def build(hidden: int = 32, lr: float = 0.02, seed: int = 0):
    """(main, startup, loss, logits, update ops)."""
    nb.manual_seed(seed)
    embed, cell, head = nn.Embedding(TOKENS, 8), nn.LSTMCell(8, hidden), nn.Linear(hidden, 2)
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        tokens = nb.static.data("tokens", [MAX_LEN, -1], dtype="int64")
        lengths = nb.static.data("lengths", [-1], dtype="int64")
        labels = nb.static.data("labels", [-1], dtype="int64")
        _, (h, _) = nn.dynamic_rnn(cell, embed(tokens), lengths)
        logits = head(h)
        loss = nb.cross_entropy(logits, labels)
        params = [*embed.parameters(), *cell.parameters(), *head.parameters()]
        nb.optim.Adam(params, lr=lr).minimize(loss)
    # the updates write parameters in place: fetched as op targets, or pruning drops them
    updates = [n for n in main.global_block().ops if n.op.inplace]
    return main, startup, loss, logits, updates


def train(steps: int = 300, batch: int = 64, seed: int = 0, log_every: int = 50) -> float:
    """Train; returns the accuracy on held-out sequences."""
    main, startup, loss, logits, updates = build(seed=seed)
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    tokens, lengths, labels = make_data(steps * batch, seed)
    start = time.perf_counter()
    for step in range(steps):
        rows = slice(step * batch, (step + 1) * batch)
        feed = {"tokens": tokens[:, rows], "lengths": lengths[rows], "labels": labels[rows]}
        (value,) = exe.run(main, feed, [loss, *updates], scope)
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {float(value):.4f}")
    test_tokens, test_lengths, test_labels = make_data(1000, seed + 1)
    feed = {"tokens": test_tokens, "lengths": test_lengths}  # no labels: not needed
    (scores,) = exe.run(main, feed, [logits], scope)
    accuracy = float(np.mean(scores.argmax(axis=1) == test_labels))
    if log_every:
        print(f"test accuracy {accuracy:.3f} ({time.perf_counter() - start:.1f} s)")
    return accuracy


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    train(args.steps, args.batch)
