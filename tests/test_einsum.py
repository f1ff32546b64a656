"""einsum against numpy's on a corpus of equations (random sizes drawn by hypothesis, size-1
dims broadcast), gradients by finite differences, eager vs graph mode, and the typed errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nbflow as nb
from nbflow import testing as nt

# (equation, the letters of each operand's dims, in order: sizes are drawn per letter)
EQUATIONS = [
    "ij,jk->ik",
    "bij,bjk->bik",
    "ij->ji",
    "ij->",
    "ij",
    "ji",
    "ii->i",
    "ii",
    "iij->j",
    "i,j->ij",
    "i,i->",
    "ij,ij->ij",
    "ijk,jkl->il",
    "bn,anm,bm->ba",
    "ij,jk,kl->il",
    "...ij,...jk->...ik",
    "...ij->...ji",
    "Ab,bC->AC",
]


def _operand_letters(equation):
    return equation.split("->")[0].split(",")


@pytest.mark.parametrize("equation", EQUATIONS)
@given(data=st.data())
def test_einsum_matches_numpy(equation, data):
    sizes = {c: data.draw(st.integers(1, 4), label=c) for c in set(equation) if c.isalpha()}
    lead = data.draw(st.lists(st.integers(1, 3), max_size=2), label="... dims")
    xs = []
    for term in _operand_letters(equation):
        shape = [sizes[c] for c in term.replace("...", "")]
        if "..." in term:
            mine = lead[data.draw(st.integers(0, len(lead)), label="... kept") :]
            shape = list(mine) + shape  # fewer leading dims broadcast, right-aligned
        if shape and data.draw(st.booleans(), label="a dim of 1"):
            shape[0] = 1  # broadcasts against the letter's size elsewhere
            if equation in ("ii->i", "ii", "iij->j"):
                shape[0] = shape[1]  # (a diagonal needs equal sizes)
        xs.append(np.random.default_rng(len(xs)).standard_normal(shape))
    expected = np.einsum(equation, *xs)
    got = nb.einsum(equation, *[nb.tensor(x) for x in xs])
    assert got.shape == expected.shape and got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("equation", ["bij,bjk->bik", "ii->i", "ij,jk,kl->il", "i,j->ij"])
def test_einsum_gradients(equation):
    rng = np.random.default_rng(1)
    shapes = {"bij,bjk->bik": [(2, 3, 4), (2, 4, 2)], "ii->i": [(3, 3)],
              "ij,jk,kl->il": [(2, 3), (3, 4), (4, 2)], "i,j->ij": [(3,), (2,)]}  # fmt: skip
    xs = [nb.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes[equation]]
    nt.gradcheck(lambda *t: nb.einsum(equation, *t), xs)
    counts = nt.check_modes(lambda *t: nb.einsum(equation, *t), *[x.numpy() for x in xs])
    assert counts["outputs"] == 1 and counts["gradients"] == len(xs)


def test_einsum_errors():
    with pytest.raises(nb.ShapeError, match="'j' is 3 and 4"):
        nb.einsum("ij,jk->ik", nb.ones(2, 3), nb.ones(4, 4))
    with pytest.raises(nb.ShapeError, match="names 3 dims of 2"):
        nb.einsum("ijk->i", nb.ones(2, 3))
    with pytest.raises(ValueError, match="invents"):
        nb.einsum("ij->ik", nb.ones(2, 3))
    with pytest.raises(ValueError, match="2 operands named, 1 given"):
        nb.einsum("ij,jk", nb.ones(2, 3))
    with pytest.raises(ValueError, match="letters"):
        nb.einsum("i1->i", nb.ones(2))
    assert nb.einsum("ij,jk", [nb.ones(2, 3), nb.ones(3, 4)]).shape == (2, 4)  # a list
