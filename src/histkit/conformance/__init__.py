"""GPU conformance: every kernel on named, seeded cases, judged by its oracle.

``histkit.conformance.runner.run_conformance`` needs a GPU; ``cases`` and
``checks`` do not.
"""
