"""A Transformer encoder reading each 8x8 digit as a sequence of 8 rows, written as PyTorch
code is (nn.TransformerEncoder, nn.functional as F, dim=, lr_scheduler), trained in graph
mode: @nbflow.jit traces the step (forward, backward, AdamW updates) into one Program.

    pip install -e ".[examples]" && python examples/transformer_digits.py
"""

from __future__ import annotations

import argparse
import time

import nbflow as nb
import nbflow.nn.functional as F
from nbflow import nn
from nbflow.data import DataLoader, load_digits


class RowTransformer(nn.Module):
    """Rows as tokens: a linear embedding plus a learned position, one encoder layer, the
    tokens averaged, a linear classifier."""

    def __init__(self, d_model=32, heads=4, layers=1, generator=None):
        super().__init__()
        self.embed = nn.Linear(8, d_model, generator=generator)
        self.position = nn.Parameter(nb.randn(8, d_model, generator=generator) * 0.1)
        layer = nn.TransformerEncoderLayer(
            d_model, heads, 2 * d_model, dropout=0.0, batch_first=True, generator=generator
        )
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d_model, 10, generator=generator)

    def forward(self, x):
        tokens = self.embed(x.view(x.size(0), 8, 8)) + self.position
        return self.head(self.encoder(tokens).mean(dim=1))


def train(epochs=12, batch=64, lr=1e-2, seed=0, log=True):
    nb.manual_seed(seed)
    train_set, test_set = load_digits("train", seed=seed), load_digits("test", seed=seed)
    model = RowTransformer(generator=nb.Generator(seed))
    optimizer = nb.optim.AdamW(model.parameters(), lr=lr)
    schedule = nb.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)

    @nb.jit
    def train_step(x, y):
        loss = F.cross_entropy(model(x), y)
        optimizer.minimize(loss)
        return loss

    @nb.jit
    def predict(x):
        return model(x).argmax(dim=1)

    loader = DataLoader(train_set, batch_size=batch, shuffle=True, drop_last=True, seed=seed)
    start = time.perf_counter()
    with nb.no_grad():
        for epoch in range(epochs):
            losses = [train_step(x, y).item() for x, y in loader]
            schedule.step()
            if log:
                print(f"epoch {epoch + 1:2d}: loss {sum(losses) / len(losses):.4f}")
        x_test, y_test = test_set.tensors
        accuracy = (predict(x_test) == y_test).float().mean().item()
    if log:
        print(f"test accuracy {accuracy:.3f} ({time.perf_counter() - start:.1f} s)")
    return accuracy


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    train(epochs=parser.parse_args().epochs)
