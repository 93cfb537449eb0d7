"""What torch.compile did in this process so far, from dynamo's counters (torch._dynamo.utils.counters): the
graph breaks it met, and the graphs inductor ran without the CUDA graphs their mode asked for."""

from __future__ import annotations

# torch.compile's modes that ask inductor for CUDA graphs (one launch replays a whole graph's kernels).
CUDA_GRAPH_MODES = frozenset({"reduce-overhead", "max-autotune"})


def graph_breaks() -> int:
    """Count the graph breaks dynamo has met in this process so far.

    Graph breaks dynamo has met in this process so far: a compiled forward that breaks runs its pieces
    between the graphs eagerly, so it is not the whole model compiled."""
    from torch._dynamo.utils import counters

    return sum(counters["graph_break"].values())


def cudagraph_skips() -> int:
    """Count the compiled graphs run without the CUDA graphs their mode asked for.

    Compiled graphs run without the CUDA graphs their mode asked for, in this process so far: every graph on
    a CPU; on a GPU one that holds a CPU tensor, mutates an input or cannot be captured (launched kernel by kernel)."""
    from torch._dynamo.utils import counters

    return counters["inductor"]["cudagraph_skips"]
