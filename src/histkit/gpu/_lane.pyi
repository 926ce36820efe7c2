from collections.abc import Callable

class LanePlan:
    kernel: int
    geometry: object
    n_and_bins: tuple
    shared_bins: object
    overwrite: object
    grid: int
    block: int
    shared_bytes: int
    zero_bytes: int
    heads: tuple[int, ...]
    def __init__(self, kernel: int, geometry: object, n_and_bins: tuple, shared_bins: object,
                 overwrite: object, zero_bytes: int, heads: tuple[int, ...]) -> None: ...

class ReplayMemset:
    role: int
    offset: int
    byte: int
    nbytes: int
    def __init__(self, role: int, offset: int, byte: int, nbytes: int) -> None: ...

class ReplayLaunch:
    kernel: int
    geometry: object
    grid: int
    block: int
    shared_bytes: int
    cooperative: bool
    args: tuple[int, ...]
    pointers: tuple[tuple[int, int, int], ...]
    def __init__(self, kernel: int, geometry: object, args: tuple[int, ...],
                 pointers: tuple[tuple[int, int, int], ...]) -> None: ...

class Replay:
    scratch_bytes: int
    steps: tuple[ReplayMemset | ReplayLaunch, ...]
    def __init__(self, scratch_bytes: int,
                 steps: tuple[ReplayMemset | ReplayLaunch, ...]) -> None: ...

class Recorded:
    record: Callable[[int], Replay | None]
    launcher: Callable[..., object]
    modulus: int
    def __init__(self, record: Callable[[int], Replay | None], launcher: Callable[..., object],
                 modulus: int) -> None: ...

class DeviceWord:
    ptr: int
    def __init__(self, ptr: int) -> None: ...

class Lane:
    served: set[str]
    def __init__(self, rt: object,
                 plan_for: Callable[[object, int, int],
                                    LanePlan | Recorded | Callable[..., object]],
                 sort: Callable[[object, int, int, object, int, int, object], tuple],
                 check: Callable[[int, str], object],
                 bad_key: Callable[[object, int, int, object], None], max_bins: int) -> None: ...
    def serve_cupy(self, cupy: object) -> None: ...
    def serve_torch(self, torch: object, dtypes: dict) -> None: ...
    def histogram(self, keys: object, num_bins: object, check: bool) -> object | None: ...
    def counting_sort(self, keys: object, num_bins: object, check: bool) -> tuple | None: ...
