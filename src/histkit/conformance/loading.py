"""A user's Python callable: found from its name, and checked before any case runs.

A callable is named ``package.module:function`` (imported as ``python -m``
would: the current directory first on the path) or ``path/to/file.py:function``
(the file loaded as a module, its folder first on the path, as running it
would). ``function`` may be dotted (``Class.method``).

Problems found here are the user's setup, not their kernel's behaviour:
they raise :class:`UsageError` before any case runs, so that ``histkit check``
exits 2 with one message instead of failing every case for the same reason.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
import zlib
from pathlib import Path

INPUT_KINDS = ("numpy", "cupy", "torch")

# How each kind calls a callable and what it must return: (positional
# arguments, keyword arguments, what it returns). One table: the signature
# check, the error messages and `histkit check --help` all read it.
CALL_FORMS: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "histogram": (("keys", "num_bins"), (), "counts"),
    "racy-histogram": (("keys", "num_bins"), (), "counts"),
    "wave": (("keys", "num_bins"), ("warp_size",), "counts"),
    "privatized": (("keys", "num_bins"), ("block_size", "num_blocks"),
                   "(counts, global_atomics)"),
    "scan": (("counts",), (), "offsets"),
    "sort": (("keys", "num_bins"), (), "(sorted_keys, original_index)"),
    "stable-sort": (("keys", "num_bins"), (), "(sorted_keys, original_index)"),
    "radix-sort": (("keys",), (), "(sorted_keys, original_index)"),
    "bin-histogram": (("samples", "bins", "range"), (), "counts or (counts, edges)"),
    "bin-histogram-half-open": (("samples", "bins", "range"), (), "counts or (counts, edges)"),
    "weighted-histogram": (("keys", "weights", "num_bins"), (), "sums"),
}


class UsageError(ValueError):
    """A problem with how histkit check was asked to run, found before any case."""


def call_form(kind: str) -> str:
    """How a callable of `kind` is called, e.g. ``f(keys, num_bins) -> counts``."""
    positional, keywords, returns = CALL_FORMS[kind]
    arguments = [*positional, *(f"{k}=..." for k in keywords)]
    return f"f({', '.join(arguments)}) -> {returns}"


def is_file_spec(spec: str) -> bool:
    """Whether ``spec``'s module part is a path to a .py file rather than a module name."""
    module_part = spec.rpartition(":")[0]
    return module_part.endswith(".py") or "/" in module_part or os.sep in module_part


def load_callable(spec: str):
    """``package.module:function`` or ``path/to/file.py:function`` -> the function.

    Raises
    ------
    UsageError
        When the spec is malformed, the module or file cannot be imported, or
        it has no such attribute; the message says which, and how to name one.
    """
    module_part, _, attribute = spec.rpartition(":")
    if not module_part or not attribute or not all(p.isidentifier()
                                                   for p in attribute.split(".")):
        raise UsageError(f"a Python kernel is given as package.module:function or "
                         f"path/to/file.py:function; got {spec!r}")
    module = _load_file(module_part) if is_file_spec(spec) else _import(module_part)
    found = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            import difflib

            near = difflib.get_close_matches(part, [n for n in dir(found)
                                                    if not n.startswith("_")], n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise UsageError(f"{module_part} has no attribute {attribute!r}{hint}") from None
    return found


def file_module_name(path: Path) -> str:
    """The module name a file is loaded under (one per resolved path)."""
    path = path.expanduser().resolve()
    return f"histkit_user_{path.stem}_{zlib.crc32(str(path).encode()):08x}"


def _import(name: str):
    # `python -m histkit check` has the current directory on its path and the
    # `histkit` script does not: give both the same, so the same name works.
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        raise UsageError(f"cannot import module {name!r} ({error}); looked in the current "
                         f"directory {here} and on sys.path. Name a file instead: "
                         f"path/to/file.py:function") from None
    except Exception as error:  # the module itself fails as it is imported
        raise UsageError(f"importing {name!r} failed: {type(error).__name__}: {error}") from None


def _load_file(path_text: str):
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        where = ("" if Path(path_text).expanduser().is_absolute()
                 else f" (looked for {path}: a relative path is read from the current "
                      f"directory, so run a reproducer where its check ran)")
        raise UsageError(f"no such Python file: {path_text}{where}")
    name = file_module_name(path)
    if name in sys.modules:
        return sys.modules[name]
    folder = str(path.parent)
    if folder not in sys.path:  # its own imports of files beside it, as a script has
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot load {path_text} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (pickle and dataclasses look modules up by name)
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise UsageError(f"loading {path_text} failed: {type(error).__name__}: {error}") from None
    return module


def check_signature(function, kind: str, name: str) -> None:
    """Raise UsageError when `function` cannot be called as `kind` calls it.

    Callables whose signature Python cannot see (some builtins and C
    functions) are let through: their first case tells.
    """
    if not callable(function):
        raise UsageError(f"{name} is not callable (a {type(function).__name__})")
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    positional, keywords, _ = CALL_FORMS[kind]
    try:
        signature.bind(*positional, **{k: k for k in keywords})
    except TypeError as error:
        raise UsageError(f"{name}{signature} cannot be called as a {kind} callable is: "
                         f"{call_form(kind)} ({error})") from None
    # Parameters named as the call form names them, in another order, would
    # take each other's arguments: every case would fail for that alone.
    named = [p.name for p in signature.parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][:len(positional)]
    if sorted(named) == sorted(positional) and named != list(positional):
        raise UsageError(f"{name}{signature} takes {', '.join(named)} in another order than a "
                         f"{kind} callable is given them: {call_form(kind)}")


def check_inputs_available(inputs: str) -> None:
    """Raise UsageError when the array kind a callable asked for cannot be made here."""
    if inputs not in INPUT_KINDS:
        raise UsageError(f"inputs must be one of {', '.join(INPUT_KINDS)}; got {inputs!r}")
    if inputs == "numpy":
        return
    try:
        module = importlib.import_module(inputs)
    except ImportError as error:
        raise UsageError(f"--inputs {inputs} needs {inputs}, which cannot be imported here "
                         f"({error}); use --inputs numpy to hand the callable NumPy "
                         f"arrays") from None
    if inputs == "torch":
        usable = bool(module.cuda.is_available())
    else:
        try:
            usable = module.cuda.runtime.getDeviceCount() > 0
        except Exception:
            usable = False
    if not usable:
        raise UsageError(f"--inputs {inputs} puts the keys on a GPU, and {inputs} sees none "
                         f"here; use --inputs numpy")


def importable_name(function) -> str | None:
    """``module:qualname`` when another process can import `function` by
    that name (not a lambda, a local function or a script's ``__main__``)."""
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", None)
    if not module or not qualname or "<" in qualname or module == "__main__":
        return None
    if module.startswith("histkit_user_"):  # loaded from a file: named by its path
        file = getattr(sys.modules.get(module), "__file__", None)
        return f"{file}:{qualname}" if file else None
    found = sys.modules.get(module)
    file = getattr(found, "__file__", None)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if found is not function:
        return None
    if "." not in module and file and file.endswith(".py") and _outside_cwd(file):
        # a top-level module found through a path of the caller's own (sys.path
        # changed, PYTHONPATH): named by its file, which loads from anywhere
        return f"{source_file_name(file)}:{qualname}"
    return f"{module}:{qualname}"


def _outside_cwd(file: str) -> bool:
    """Whether file's folder is not the current directory (where a command
    line run from here would import a top-level module from)."""
    folder = Path(file).resolve().parent
    return folder != Path.cwd().resolve() and not str(folder).startswith(_library_roots())


def source_file_name(file: str) -> str:
    """A file as a command line names it: relative where it is below the
    current directory, absolute elsewhere."""
    relative = os.path.relpath(file)
    return file if relative.startswith("..") else relative


def main_script_name(function) -> str | None:
    """``path/to/script.py:function`` for a function of the script being run
    (``__main__``); None otherwise."""
    if getattr(function, "__module__", None) != "__main__":
        return None
    qualname = getattr(function, "__qualname__", "<")
    file = getattr(sys.modules.get("__main__"), "__file__", None)
    if "<" in qualname or not file:
        return None
    return f"{os.path.relpath(file)}:{qualname}"


_HISTKIT = str(Path(__file__).resolve().parents[1])  # this package's own frames


@functools.lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    """Where installed code lives (the standard library, site-packages, and
    histkit itself): frames there are not the user's."""
    import sysconfig

    roots = {sysconfig.get_paths()[name] for name in ("stdlib", "platstdlib", "purelib",
                                                       "platlib")}
    return (_HISTKIT, *(str(Path(root).resolve()) for root in roots))


def raised(error: BaseException) -> str:
    """``Type: message (at file.py:LINE in function)``: an exception from a
    user's code, with the innermost frame of the user's own files (not the
    standard library's, an installed package's or histkit's) where it was
    raised: the line to look at. Just ``Type: message`` where no such frame
    is on the traceback."""
    text = f"{type(error).__name__}: {error}"
    frames = [(frame.filename, frame.lineno, frame.name)
              for frame in traceback.extract_tb(error.__traceback__)]
    where = users_frame(frames)
    return f"{text} ({where})" if where else text


def users_frame(frames) -> str:
    """``at file.py:LINE in function`` for the innermost of ``frames``
    ((filename, line, function), outermost first) in the user's own files:
    not generated code, the standard library, an installed package or
    histkit. "" where there is none."""
    roots = _library_roots()
    own = [(name, line, function) for name, line, function in frames
           if not name.startswith("<")  # generated code: <string>, <frozen ...>
           and not str(Path(name).resolve()).startswith(roots)]
    if not own:
        return ""
    name, line, function = own[-1]
    return f"at {os.path.relpath(name)}:{line} in {function}"
