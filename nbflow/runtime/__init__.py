"""The runtime layer: devices (device.py), recycled host buffers (buffers.py) and the
collectives' transport (comm.py). It builds on core only."""
