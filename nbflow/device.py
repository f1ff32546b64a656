"""The old path of nbflow/runtime/device.py (bench/gpu_check.py's `from nbflow import device`)."""

from .runtime.device import *  # noqa: F403
