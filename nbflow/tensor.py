"""The old path of nbflow/eager/tensor.py (`from nbflow.tensor import Tensor`)."""

from .eager.tensor import *  # noqa: F403
