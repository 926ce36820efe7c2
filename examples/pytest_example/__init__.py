"""A package, so that pytest puts the repository root on sys.path: the test
file imports the example kernels as ``examples.python_kernels``."""
