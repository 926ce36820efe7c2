"""What a user's own test file looks like with histkit's pytest plugin: the
conformance matrix becomes one test item per case.

    pytest examples/pytest_example

(the plugin loads by itself through its pytest11 entry point once histkit is
installed; the fixture is ``histkit_check``). The histogram items pass; the
stable-sort items fail on purpose wherever NumPy's quicksort leaves equal
keys out of input order (about half of them: bad keys, all-equal, sorted
and all-distinct inputs pass at any size), each with its smallest failing
input and the command that reproduces it.
"""

from examples import python_kernels
from histkit.conformance.pytest_plugin import conformance_cases


@conformance_cases("histogram")
def test_my_histogram(case, histkit_check):
    histkit_check(python_kernels.histogram, "histogram", case)


@conformance_cases("stable-sort")
def test_my_stable_sort(case, histkit_check):
    histkit_check(python_kernels.quicksort_argsort, "stable-sort", case)
