"""PyTorch's own OpInfo database against nbflow (issue 39, item 1): for every entry of
torch.testing._internal.common_methods_invocations.op_db that maps to an nbflow function or
method, its first sample inputs in float64, float32, int64 and complex128 (those the op
supports): forward values, dtypes and shapes, and float64 and complex128 gradients (a fixed
random cotangent), against PyTorch.

Every outcome other than a pass is listed here: DOCUMENTED (an intended difference, also
stated in docs/eager.md, "Where nbflow differs from PyTorch") or XFAIL (not fixed yet, with the
kind observed).
Both are strict: a sample failing in a way not listed fails its entry's test, and so does a
listed (entry, kind) that no sample shows any more. Keys are "entry" (any dtype) or
"entry@dtype". `python tools/opinfo_report.py` prints the coverage figures."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # torch.testing._internal needs it (the `test` extra has it)

import opinfo_harness as h  # noqa: E402

# ---------------------------------------------------------------- documented differences
DOCUMENTED = {
    # avg_pool3d runs as two avg_pool2d passes: an integer mean would be truncated twice
    "nn.functional.avg_pool3d@int64": {"refused": "integer input raises a typed DTypeError"},
    # bernoulli draws are not differentiable in p (PyTorch: a zero gradient)
    "bernoulli": {"no_grad": "a random draw has no gradient in p (PyTorch: zero)"},
    # integers to negative integer powers: numpy's error, not PyTorch's garbage values
    "__rpow__@int64": {"refused": "integer ** negative integer raises (numpy's rule)"},
    # which of equal values' indices is returned is unspecified in PyTorch too
    "kthvalue@int64": {"wrong_value": "index among tied values differs (unspecified)"},
    "topk@int64": {"wrong_value": "index among tied values differs (unspecified)"},
    # a positional axis is numpy's (values only): PyTorch's (values, indices) needs dim=
    "max.reduction_with_dim": {"wrong_shape": "max(x, 1) is values only; max(x, dim=1) pairs"},
    "min.reduction_with_dim": {"wrong_shape": "min(x, 1) is values only; min(x, dim=1) pairs"},
    # arguments without meaning that PyTorch accepts silently
    "nn.functional.hardshrink": {"refused": "a negative lambd raises (PyTorch: accepted)"},
    "nn.functional.layer_norm": {"refused": "a negative eps raises (PyTorch: accepted)"},
    # accuracy: nbflow's values are the more accurate ones (docs/eager.md)
    # an ill-conditioned float32 sample: nbflow computes in float64 (2e-8 of the largest entry
    # from the float64 value), PyTorch in float32 (5e-7 off, beyond the float32 tolerance)
    "matrix_exp@float32": {"wrong_value": "PyTorch's float32 result is 5e-7 relative off"},
    # PyTorch's values are off by ~2e-7 near x = 5.5 (where its series switch); nbflow's are
    # mpmath's and scipy's to 1e-16
    "special.bessel_j0@float64": {"wrong_value": "PyTorch's value ~2e-7 off near x = 5.5"},
    "special.bessel_y1@float64": {"wrong_value": "PyTorch's value ~3e-7 off near x = 5.5"},
    # intended (nbflow/ops/ctc.py): nbflow's gradient is the loss's derivative with respect to
    # log_probs; PyTorch's adds exp(log_probs) (which cancels through a log_softmax)
    "nn.functional.ctc_loss": {"wrong_grad": "PyTorch's adds exp(log_probs)"},
    # nbflow's tensors have no storage beyond their elements (nbflow/ops/strided.py): the
    # samples view elements 5:15 of a 20-element storage, so storage_offset=0 reads elements
    # before the view in PyTorch (nbflow: the view's first) and storage_offset=10 reads past
    # the view's end in nbflow (an OutOfRangeError); the sample without an offset passes
    "as_strided.partial_views": {
        "wrong_value": "storage_offset counts from the tensor's first element, not a storage's",
        "refused": "positions past the tensor's last element raise OutOfRangeError",
    },
    # the sample's bin edges are random, not increasing: PyTorch does not check and returns
    # counts without meaning; nbflow raises, as numpy and nb.histogram do
    "histogramdd": {"refused": "decreasing bin edges raise DomainError (numpy's rule)"},
    # PyTorch's gradient in input is wrong: it zeroes the positions src does not overwrite
    # instead of those it does (torch.autograd.gradcheck fails on these samples);
    # tests/test_opinfo_functions.py checks nbflow's against finite differences
    "as_strided_scatter@float64": {"wrong_grad": "PyTorch's input gradient fails gradcheck"},
    # eigenvectors are defined up to a phase: numpy's LAPACK and PyTorch's may pick -v for v
    # (the eigenvalues, and the gradients of phase-invariant losses, agree)
    "linalg.eig": {"wrong_value": "eigenvectors up to a phase (a sign here)"},
    # hermitian=True on a non-symmetric sample: both read the lower triangle; nbflow's gradient
    # is the derivative of that (the lower triangle's), PyTorch's (through eigh) is neither it
    # nor its symmetric part
    "linalg.pinv.hermitian@float64": {"wrong_grad": "hermitian=True, a non-symmetric input"},
}

# ---------------------------------------------------------------- not fixed yet (issue 39)
XFAIL = {}

# ---------------------------------------------------------------- entries with no counterpart
# Families: harness.UNMAPPED_FAMILIES (sparse., PyTorch-private
# aten entry points). The rest, one by one:
_NO_COMPLEX32 = "complex32 (chalf): nbflow has complex64 and complex128"
UNMAPPED = {
    "chalf": _NO_COMPLEX32,
    "bfloat16": "no bfloat16 dtype",
    "hash_tensor": "a uint64 hash: nbflow has no uint64 dtype",
    "max_pool2d_with_indices_backward": "aten backward entry point",
    "native_dropout_backward": "aten backward entry point",
    "to_sparse": "sparse tensors: nbflow has dense tensors only",
}

MAPPED = sorted(k for k in h.ENTRIES if h.resolve(k) is not None)


def expected(key, dtype, kind):
    """The table ("DOCUMENTED" or "XFAIL") and key that list this outcome, or None."""
    for name, table in (("DOCUMENTED", DOCUMENTED), ("XFAIL", XFAIL)):
        for tkey in (f"{key}@{dtype}", key):
            if kind in table.get(tkey, {}):
                return name, tkey
    return None


def check_entry(key):
    """(unexpected outcomes, listed (table key, kind) pairs no sample shows, counts by category)"""
    results = h.run_entry(key)
    seen, unexpected, counts = set(), [], {}
    for dtype, i, kind, detail in results:
        if kind in ("pass", "n/a"):
            category = kind
        else:
            hit = expected(key, dtype, kind)
            if hit is None:
                unexpected.append(f"{dtype} sample {i}: {kind}: {detail}")
                category = f"unexpected {kind}"
            else:
                seen.add((hit[1], kind))
                category = "documented" if hit[0] == "DOCUMENTED" else f"xfail {kind}"
        counts[category] = counts.get(category, 0) + 1
    listed = {
        (tkey, kind)
        for table in (DOCUMENTED, XFAIL)
        for tkey, kinds in table.items()
        if tkey == key or tkey.startswith(key + "@")
        for kind in kinds
    }
    return unexpected, sorted(listed - seen), counts


@pytest.mark.parametrize("key", MAPPED)
def test_opinfo_entry(key):
    unexpected, stale, _ = check_entry(key)
    assert not unexpected, "new mismatches with PyTorch:\n" + "\n".join(unexpected)
    assert not stale, f"listed but not observed any more (remove from the table): {stale}"


def test_unmapped_entries_are_listed():
    unmapped = {k for k in h.ENTRIES if h.resolve(k) is None}
    by_family = {k for k in unmapped if h.unmapped_reason(k) is not None}
    assert unmapped - by_family == set(UNMAPPED), (
        f"unlisted: {sorted(unmapped - by_family - set(UNMAPPED))}; "
        f"mapped now (remove from UNMAPPED): {sorted(set(UNMAPPED) - unmapped)}"
    )


def test_tables_name_real_entries():
    for table in (DOCUMENTED, XFAIL):
        for tkey, kinds in table.items():
            assert tkey.split("@")[0] in h.ENTRIES, tkey
            assert set(kinds) <= set(h.KINDS), (tkey, kinds)
