"""GPU conformance: every kernel on named, seeded cases, judged by its oracle.

``check(impl, kind)`` judges a user's kernel (a .cu file or a Python
callable) by the same cases and rules. ``runner.run_conformance`` runs
histkit's own kernels (it needs a GPU); ``cases`` and ``checks`` do not.
"""

from histkit.conformance.cases import Case
from histkit.conformance.check import check
from histkit.conformance.check_verdict import CheckReport, Failure, input_json
from histkit.conformance.loading import UsageError

__all__ = ["Case", "CheckReport", "Failure", "UsageError", "check", "input_json"]


def __dir__() -> list[str]:
    """The public names (what tab completion offers), not the imports."""
    return sorted(__all__)
