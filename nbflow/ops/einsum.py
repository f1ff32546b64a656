"""einsum: numpy's and PyTorch's Einstein summation, composed from nbflow's ops.

No kernel of its own: each operand's repeated letters become diagonals (a product with an
identity mask, summed), letters read by nothing later are summed out at once, and the operands
are contracted left to right, each pair as one batched matmul ((batch, left, summed) @ (batch,
summed, right)), so BLAS does the work and the gradient, graph mode and the GPU come with the
ops. `...` stands for the leading dims each operand does not name (broadcast right-aligned);
without `->` the output is the letters used once, in alphabetical order."""

from ..core.errors import AttrError, DomainError, ShapeError
from .creation import eye
from .elementwise import where
from .linalg import matmul
from .reduce import sum as reduce_sum
from .shape import broadcast_to, permute, reshape

# stand-ins for the dims `...` covers: characters no equation can use
_SPARE = "".join(chr(0x100 + i) for i in range(64))
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def einsum(equation: str, *operands):
    """Contract `operands` as `equation` says ("ij,jk->ik", "bij,bjk->bik", "ii->i",
    "...ij->...ji"); see the module docstring."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])  # einsum(eq, [a, b]), as PyTorch allows
    inputs, output = _parse(equation, operands)
    sizes = _sizes(equation, inputs, operands)
    terms = []
    for letters, x in zip(inputs, operands):
        x = _expand_ones(x, letters, sizes)
        terms.append(_diagonals(x, list(letters), sizes))
    for k in range(len(terms)):
        later = set(output).union(*(terms[j][1] for j in range(len(terms)) if j != k))
        terms[k] = _sum_unused(*terms[k], later)
    x, letters = terms[0]
    for k in range(1, len(terms)):
        later = set(output).union(*(t[1] for t in terms[k + 1 :]))
        x, letters = _contract(x, letters, *terms[k], later, sizes)
    x, letters = _sum_unused(x, letters, set(output))
    return permute(x, tuple(letters.index(c) for c in output)) if letters else x


def _parse(equation: str, operands):
    """([letters of each operand], output letters), `...` replaced by spare letters."""
    if not isinstance(equation, str):
        raise AttrError(f"einsum: the equation must be a str, got {type(equation).__name__}")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(operands):
        raise DomainError(
            f"einsum '{equation}': {len(inputs)} operands named, {len(operands)} given"
        )
    for term in inputs + ([rhs] if arrow else []):
        if not all(c in _LETTERS or c == "." for c in term) or "." in term.replace("...", ""):
            raise DomainError(f"einsum '{equation}': '{term}' is not letters a-z, A-Z and '...'")
    ell = max((x.ndim - len(t.replace("...", "")) for t, x in zip(inputs, operands)), default=0)
    spare = _SPARE[len(_SPARE) - ell :] if ell > 0 else ""
    named = []
    for t, x in zip(inputs, operands):
        n = x.ndim - len(t.replace("...", ""))
        if "..." not in t and n != 0 or n < 0:
            raise ShapeError(f"einsum '{equation}': '{t}' names {len(t)} dims of {x.ndim}")
        named.append(t.replace("...", spare[len(spare) - n :] if n else ""))
    if arrow:
        out = rhs.replace("...", spare)
    else:
        counts = "".join(named)
        once = sorted(c for c in set(counts) if counts.count(c) == 1 and c in _LETTERS)
        out = spare + "".join(once)
    if len(set(out)) != len(out) or not set(out) <= set("".join(named)):
        raise DomainError(f"einsum '{equation}': output '{rhs}' repeats or invents a letter")
    return named, out


def _sizes(equation, inputs, operands) -> dict:
    sizes = {}
    for letters, x in zip(inputs, operands):
        for c, n in zip(letters, x.shape):
            if n == -1:
                raise ShapeError(f"einsum '{equation}': needs known shapes, got {x.shape}")
            if sizes.get(c, 1) not in (1, n) and n != 1:
                raise ShapeError(f"einsum '{equation}': '{c}' is {sizes[c]} and {n} long")
            sizes[c] = max(sizes.get(c, 1), n)
    return sizes


def _expand_ones(x, letters, sizes):
    """x broadcast where a dim of 1 meets the letter's full size elsewhere."""
    shape = tuple(sizes[c] for c in letters)
    return x if tuple(x.shape) == shape else broadcast_to(x, shape)


def _diagonals(x, letters, sizes):
    """(x, letters) with each letter repeated in one operand reduced to its diagonal."""
    for c in sorted(set(letters)):
        while letters.count(c) > 1:
            p = letters.index(c)
            q = letters.index(c, p + 1)
            n = sizes[c]
            mask_shape = [1] * len(letters)
            mask_shape[p] = mask_shape[q] = n
            mask = eye(n, dtype="bool", device=getattr(x, "device", None))
            mask = reshape(mask, tuple(mask_shape))
            x = reduce_sum(where(mask, x, 0), axis=q)  # (x * mask: NaN * 0 is NaN)
            del letters[q]
    return x, letters


def _sum_unused(x, letters, wanted):
    gone = [i for i, c in enumerate(letters) if c not in wanted]
    if not gone:
        return x, letters
    return reduce_sum(x, axis=tuple(gone)), [c for c in letters if c in wanted]


def _contract(a, la, b, lb, later, sizes):
    """a and b contracted over the letters both have and nothing later reads, as one batched
    matmul; returns (result, its letters: batch, a's own, b's own)."""
    both = [c for c in la if c in lb]
    batch = [c for c in both if c in later]
    summed = [c for c in both if c not in later]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]

    def grouped(x, letters, groups):
        order = [letters.index(c) for g in groups for c in g]
        x = permute(x, tuple(order)) if order != list(range(len(letters))) else x
        shape = tuple(_prod(sizes[c] for c in g) for g in groups)
        return reshape(x, shape)

    out = matmul(grouped(a, la, (batch, left, summed)), grouped(b, lb, (batch, summed, right)))
    letters = batch + left + right
    return reshape(out, tuple(sizes[c] for c in letters)), letters


def _prod(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n


__all__ = ["einsum"]
