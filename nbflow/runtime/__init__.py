"""The runtime layer: devices (device.py), recycled host buffers (buffers.py) and the
collectives' transport (comm.py). It builds on core (device.py borrows the CUDA kernels' copy
of a strided array when called)."""
