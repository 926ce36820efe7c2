"""GPU side of histkit (placeholder until the kernels land)."""


def gpu_unavailable_reason():
    return "histkit.gpu is not built yet"
