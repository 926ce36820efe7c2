import numpy as np
import pytest

KEY_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
EDGE_SIZES = [0, 1, 31, 32, 33, 255, 256, 257]
DISTRIBUTIONS = ["uniform", "onebin", "zipf", "sorted", "round-robin"]


@pytest.fixture(params=KEY_DTYPES, ids=lambda d: np.dtype(d).name)
def key_dtype(request):
    return request.param
