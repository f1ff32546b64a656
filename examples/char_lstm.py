"""A character-level LSTM language model on a small generated text, trained eagerly.

The text is a few hundred lines of nursery-rhyme-like sentences from a tiny grammar ("the
small cat sat on the red mat."), so there is structure to learn (words, spelling, the grammar)
and nothing to download. The model is Embedding -> LSTMCell, unrolled over time -> Linear,
trained with truncated backpropagation through time: the text is cut into `batch` parallel
streams, each step trains on the next `seq_len` characters of every stream, and the LSTM state
is carried over to the next step but detached, so gradients stop at the chunk boundary.
Adam, gradient clipping by norm; at the end it continues a prompt, sampling with a seeded
nbflow.Generator (or greedily with --temperature 0). --jit runs each training step as one
traced Program instead (with seed 0 its losses equal the eager ones, checked over 40 steps).

    python examples/char_lstm.py [--steps 200] [--jit]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import nbflow as nb
from nbflow import nn

# ---------------------------------------------------------------- the text

SUBJECTS = ["the cat", "the dog", "a bird", "the old man", "my sister", "a little mouse"]
ADJECTIVES = ["small", "red", "big", "happy", "sleepy", "green"]
VERBS = ["sat on", "ran to", "looked at", "jumped over", "sang to", "slept by"]
OBJECTS = ["the mat", "the tree", "the moon", "a hat", "the hill", "the house"]


def make_text(lines: int = 400, seed: int = 0) -> str:
    """`lines` sentences of the form SUBJECT [ADJECTIVE] VERB OBJECT [and VERB OBJECT]."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(lines):
        subject = str(rng.choice(SUBJECTS))
        if rng.random() < 0.5:  # "the cat" -> "the small cat"
            det, noun = subject.rsplit(" ", 1)
            subject = f"{det} {rng.choice(ADJECTIVES)} {noun}"
        sentence = f"{subject} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
        if rng.random() < 0.3:
            sentence += f" and {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
        out.append(sentence + ".")
    return "\n".join(out) + "\n"


class Vocab:
    def __init__(self, text: str):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, s: str) -> np.ndarray:
        return np.array([self.index[c] for c in s], dtype=np.int64)

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in ids)


# ---------------------------------------------------------------- the model


class CharLSTM(nn.Module):
    def __init__(self, vocab_size, embed=16, hidden=128, generator=None):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed, generator=generator)
        self.cell = nn.LSTMCell(embed, hidden, generator=generator)
        self.head = nn.Linear(hidden, vocab_size, generator=generator)

    def forward(self, ids, state=None):
        """ids (batch, time) int64 -> logits (batch * time, vocab), the final (h, c)."""
        batch, steps = ids.shape
        x = self.embed(ids)  # (batch, time, embed)
        outputs = []
        for t in range(steps):  # unroll the cell over the time steps
            h, c = state = self.cell(x[:, t], state)
            outputs.append(h)
        hs = nb.stack(*outputs, axis=1)  # (batch, time, hidden)
        logits = self.head(nb.reshape(hs, (batch * steps, -1)))
        return logits, state


def batches(data: np.ndarray, batch: int, seq_len: int):
    """Cut `data` into `batch` parallel streams and yield (input, target) chunks of seq_len,
    in order, so the state after one chunk is the right start for the next (and repeat)."""
    per_stream = (len(data) - 1) // batch
    streams = data[: per_stream * batch + 1]
    inputs = streams[:-1].reshape(batch, per_stream)
    targets = streams[1:].reshape(batch, per_stream)
    while True:
        for start in range(0, per_stream - seq_len + 1, seq_len):
            chunk = slice(start, start + seq_len)
            yield nb.tensor(inputs[:, chunk]), nb.tensor(targets[:, chunk].reshape(-1))


# ---------------------------------------------------------------- training and sampling


def train(
    steps=200,
    batch=32,
    seq_len=24,
    hidden=128,
    lr=0.01,
    clip=1.0,
    seed=0,
    lines=400,
    use_jit=False,
    log_every=25,
):
    """Train for `steps` chunks; returns (model, vocab, per-step losses)."""
    nb.manual_seed(seed)
    text = make_text(lines, seed)
    vocab = Vocab(text)
    model = CharLSTM(len(vocab), hidden=hidden, generator=nb.Generator(seed))
    optimizer = nb.optim.Adam(model.parameters(), lr=lr)

    def eager_step(x, y, state):
        logits, state = model(x, state)
        loss = nb.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        nb.optim.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        return loss, state

    @nb.jit
    def graph_step(x, y, h, c):  # the same step as one Program: backward, clipping, Adam
        logits, (h, c) = model(x, (h, c))
        loss = nb.cross_entropy(logits, y)
        optimizer.minimize(loss, max_grad_norm=clip)
        return loss, h, c

    losses = []
    state = None
    data = batches(vocab.encode(text), batch, seq_len)
    start = time.perf_counter()
    for step in range(steps):
        x, y = next(data)
        if use_jit:
            if state is None:
                state = (nb.zeros(batch, hidden), nb.zeros(batch, hidden))
            with nb.no_grad():
                loss, *state = graph_step(x, y, *state)
        else:
            loss, state = eager_step(x, y, state)
            state = tuple(s.detach() for s in state)  # truncated BPTT: stop gradients here
        losses.append(loss.item())
        if log_every and (step % log_every == 0 or step == steps - 1):
            recent = np.mean(losses[-log_every:])
            print(f"step {step:4d}  loss {losses[-1]:.3f}  (recent mean {recent:.3f})")
    seconds = time.perf_counter() - start
    if log_every:
        print(f"{steps} steps in {seconds:.1f} s ({1000 * seconds / steps:.0f} ms/step)")
    return model, vocab, losses


def sample(model, vocab, prompt="the ", length=200, temperature=0.7, seed=0) -> str:
    """Continue `prompt` one character at a time; temperature 0 is greedy (argmax), otherwise
    draw from softmax(logits / temperature) with the Gumbel-max trick and a seeded Generator:
    argmax(logits / T + g) with g = -log(-log(u)), u uniform, is a sample of that softmax."""
    gen = nb.Generator(seed)
    ids = list(vocab.encode(prompt))
    with nb.no_grad():
        logits, state = model(nb.tensor([ids]))  # read the prompt
        for _ in range(length):
            last = logits[-1:]  # (1, vocab): the prediction after the last character
            if temperature > 0:
                u = nb.uniform(1, len(vocab), low=1e-7, high=1.0, generator=gen)
                last = last / temperature - nb.log(-nb.log(u))
            ids.append(int(nb.argmax(last, axis=1).item()))
            logits, state = model(nb.tensor([ids[-1:]]), state)
    return vocab.decode(ids)


def main(steps=200, use_jit=False, temperature=0.7, prompt="the ", **kwargs):
    model, vocab, losses = train(steps=steps, use_jit=use_jit, **kwargs)
    print(f"loss: first step {losses[0]:.3f}, last 10 steps {np.mean(losses[-10:]):.3f}")
    print(f"--- sample (temperature {temperature}) ---")
    print(sample(model, vocab, prompt, temperature=temperature))
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--temperature", type=float, default=0.7, help="0: greedy")
    parser.add_argument("--prompt", default="the ")
    parser.add_argument("--jit", action="store_true", help="train in graph mode (@nbflow.jit)")
    args = parser.parse_args()
    main(args.steps, args.jit, args.temperature, args.prompt)
