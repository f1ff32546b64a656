"""The CUDA kernels: loader.py launches them without numba-cuda until a GPU array is first used;
skeletons.py (and ctc.py, conv3d.py) hold the kernels, which import numba.cuda."""
