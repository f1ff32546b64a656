"""Train the digits MLP of train_digits.py in graph mode, with the static API.

The model, its backward pass and the SGD updates are all ops of one Program, built once:
    forward -> cross_entropy -> append_backward -> sub_(param, grad * lr) for each parameter.
An Executor runs the startup program once (parameter initialisation), then the main program
per batch. Evaluation fetches only the logits: the executor prunes the backward and update ops,
so the same Program serves training and inference.
"""

import time

import numpy as np
from train_digits import load

import nbflow as nb
from nbflow.graph import needed_ops


def build(hidden=64, lr=0.1):
    """(main, startup, loss, logits, update ops) for a 64-in, 10-out MLP."""
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 64])
        y = nb.static.data("y", [-1], dtype="int64")
        w1 = nb.static.create_parameter("w1", [64, hidden])
        b1 = nb.static.create_parameter("b1", [hidden], initializer=("constant", 0.0))
        w2 = nb.static.create_parameter("w2", [hidden, 10])
        b2 = nb.static.create_parameter("b2", [10], initializer=("constant", 0.0))
        logits = nb.relu(x @ w1 + b1) @ w2 + b2
        loss = nb.cross_entropy(logits, y)
        for p, g in nb.append_backward(loss):
            nb.sub_(p, g * lr)
    # the updates write parameters in place and produce nothing new, so nothing fetched
    # depends on them; written after the loss's backward, they are its updates, which a run
    # fetching the loss runs (as PaddlePaddle's executor runs the optimizer ops)
    updates = [n for n in main.global_block().ops if n.op.name == "sub_"]
    return main, startup, loss, logits, updates


def main(epochs=30, batch=64, seed=0):
    (x_train, y_train), (x_test, y_test) = load(seed)
    main_program, startup, loss, logits, updates = build()
    print(main_program)
    exe, scope = nb.Executor(), nb.Scope()
    nb.manual_seed(seed)
    exe.run(startup, scope=scope)

    block = main_program.global_block()
    n_train = len(needed_ops(block, [loss, *updates]))
    n_eval = len(needed_ops(block, [logits]))
    # training skips only the unused gradient of the input x; evaluation skips the backward
    print(f"ops run of {len(block.ops)}: {n_train} per training step, {n_eval} per evaluation")

    order_rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for epoch in range(epochs):
        order = order_rng.permutation(len(x_train))
        total = 0.0
        for i in range(0, len(order), batch):
            idx = order[i : i + batch]
            feed = {"x": x_train[idx], "y": y_train[idx]}
            (value,) = exe.run(main_program, feed, [loss], scope)  # (and its updates)
            total += float(value) * len(idx)
        if epoch % 5 == 4 or epoch == epochs - 1:
            print(f"epoch {epoch + 1:3d}  loss {total / len(order):.4f}")
    (scores,) = exe.run(main_program, {"x": x_test}, [logits], scope)  # no "y": not needed
    accuracy = float(np.mean(scores.argmax(axis=1) == y_test))
    print(f"test accuracy {accuracy:.3f} ({time.perf_counter() - start:.1f} s)")
    return accuracy


if __name__ == "__main__":
    main()
