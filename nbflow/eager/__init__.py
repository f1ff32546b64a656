"""The eager layer: Tensor and its tape (tensor.py), the operators that tensors and graph values
share (operators.py), GPU tensors, printing, the NaN/Inf and memory checks (checking.py) and
autocast (amp.py). It builds on core, runtime, kernels, the ops and nbflow.special."""
