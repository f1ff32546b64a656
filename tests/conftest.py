import os

from hypothesis import HealthCheck, settings

# "ci" (default): few, derandomized examples so the suite fits 2 cores; "dev": many more.
settings.register_profile(
    "ci",
    max_examples=12,
    derandomize=True,
    deadline=None,  # first calls JIT-compile
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("NBFLOW_HYPOTHESIS_PROFILE", "ci"))

# graph-mode runs fill the buffers the memory pass releases with NaN, so a reuse bug shows up
# as NaN in whichever test hits it (nbflow/graph/memory.py)
os.environ.setdefault("NBFLOW_POISON_FREED", "1")
