"""The real-model workloads of bench/real_models.py, written once against PyTorch's API.

Each builder takes the framework's top-level module (`torch` or `nbflow`) and returns a model
built from that framework's `nn`; `init_weights` then fills every parameter from one numpy
stream by state_dict key, so both frameworks start from the same weights, and `batch` makes
the same data. The tests (tests/test_bench_models.py) train these models for a few steps in
eager mode and under `@nbflow.jit` and compare the losses.
"""

from __future__ import annotations

import math

import numpy as np

MODELS = ("cnn", "transformer", "lstm", "mlp")


def cnn(lib, width=32):
    """A ResNet-style CNN: conv3x3 stem (3 -> width) + BN, a residual block of `width`
    channels, a stride-2 block to 2 x width (1x1 projection shortcut), adaptive average
    pooling, linear."""
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, c_in, c_out, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c_out)
            self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c_out)
            self.shortcut = None
            if stride != 1 or c_in != c_out:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out)
                )

        def forward(self, x):
            h = self.bn1(self.conv1(x)).relu()
            h = self.bn2(self.conv2(h))
            return (h + (x if self.shortcut is None else self.shortcut(x))).relu()

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, width, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(width)
            self.block1 = Block(width, width, 1)
            self.block2 = Block(width, 2 * width, 2)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(2 * width, 10)

        def forward(self, x):
            h = self.bn(self.stem(x)).relu()
            h = self.block2(self.block1(h))
            return self.fc(self.pool(h).flatten(1))

    return ResNet()


def transformer(lib, vocab=1000, d_model=128, heads=4, ff=256, layers=2):
    """A Transformer encoder classifier: embedding, `layers` post-norm encoder layers
    (batch_first, no dropout), mean over tokens, linear."""
    nn = lib.nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, d_model)
            layer = nn.TransformerEncoderLayer(
                d_model, heads, dim_feedforward=ff, dropout=0.0, batch_first=True
            )
            self.encoder = nn.TransformerEncoder(layer, layers)
            self.fc = nn.Linear(d_model, 10)

        def forward(self, tokens):
            return self.fc(self.encoder(self.embed(tokens)).mean(1))

    return Encoder()


def lstm(lib, n_in=32, hidden=128):
    """An LSTM classifier: nn.LSTM (batch_first), its last step, linear."""
    nn = lib.nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(n_in, hidden, batch_first=True)
            self.fc = nn.Linear(hidden, 10)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.fc(out[:, -1])

    return Classifier()


def mlp(lib, sizes=(784, 256, 256, 10)):
    nn = lib.nn
    layers = []
    for n_in, n_out in zip(sizes, sizes[1:]):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


BUILDERS = {"cnn": cnn, "transformer": transformer, "lstm": lstm, "mlp": mlp}
OPTIMIZER = {"cnn": "Adam", "transformer": "AdamW", "lstm": "Adam", "mlp": "SGD"}


def build(lib, name, seed=0, **sizes):
    """The model `name` of framework `lib` with the weights of `init_weights(seed)`."""
    model = BUILDERS[name](lib, **sizes)
    init_weights(lib, model, seed)
    return model


def init_weights(lib, model, seed=0):
    """Every parameter from one numpy stream, in sorted state_dict order: uniform in
    +-1/sqrt(fan_in) for weights and biases, ones for norm scales (a BatchNorm's running
    statistics are left at 0 and 1)."""
    rng = np.random.default_rng(seed)
    params = dict(model.named_parameters())
    values = {}
    for name in sorted(params):
        shape = tuple(params[name].shape)
        owner = type(model.get_submodule(name.rsplit(".", 1)[0])).__name__
        if "Norm" in owner:
            fill = 1.0 if name.endswith("weight") else 0.0
            values[name] = np.full(shape, fill, np.float32)
            continue
        bound = 1.0 / math.sqrt(math.prod(shape[1:]) if len(shape) > 1 else shape[0])
        values[name] = rng.uniform(-bound, bound, shape).astype(np.float32)
    state = model.state_dict()
    for name, value in values.items():
        state[name] = lib.tensor(value)
    model.load_state_dict(state)


BATCH = {"cnn": 32, "transformer": 32, "lstm": 32, "mlp": 128}


def batch(name, batch_size=None, seed=1):
    """(inputs, int64 labels) of the workload `name`, as numpy arrays (BATCH examples unless
    batch_size is given)."""
    batch_size = BATCH[name] if batch_size is None else batch_size
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, batch_size).astype(np.int64)
    if name == "cnn":
        return rng.standard_normal((batch_size, 3, 32, 32)).astype(np.float32), labels
    if name == "transformer":
        return rng.integers(0, 1000, (batch_size, 64)).astype(np.int64), labels
    if name == "lstm":
        return rng.standard_normal((batch_size, 50, 32)).astype(np.float32), labels
    return rng.standard_normal((batch_size, 784)).astype(np.float32), labels


def optimizer(lib, name, model):
    kind = OPTIMIZER[name]
    lr = 0.01 if kind == "SGD" else 1e-3
    return getattr(lib.optim, kind)(model.parameters(), lr=lr)


def flops(name):
    """Multiply-adds x 2 of one training step (forward + 2x backward), the GEMM-like work only:
    the figure the step's GFLOP/s is reported against."""
    batch_size = BATCH[name]
    if name == "cnn":
        w = 32
        # (out_h * out_w, c_in * k * k, c_out) per conv
        convs = [
            (32 * 32, 3 * 9, w),
            (32 * 32, w * 9, w),
            (32 * 32, w * 9, w),
            (16 * 16, w * 9, 2 * w),
            (16 * 16, 2 * w * 9, 2 * w),
            (16 * 16, w, 2 * w),
        ]
        forward = sum(p * k * c for p, k, c in convs) * batch_size
    elif name == "transformer":
        tokens, d, ff, seq = batch_size * 64, 128, 256, 64
        per_layer = tokens * (4 * d * d + 2 * d * ff) + 2 * batch_size * seq * seq * d
        forward = 2 * per_layer + batch_size * d * 10
    elif name == "lstm":
        forward = 50 * batch_size * 4 * 128 * (32 + 128) + batch_size * 128 * 10
    else:
        forward = batch_size * (784 * 256 + 256 * 256 + 256 * 10)
    return 2 * 3 * forward
