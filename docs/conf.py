"""Sphinx configuration of placerl's documentation (``make docs``).

Pages are MyST Markdown; the API reference is generated from the Google-style docstrings
(autodoc, napoleon, autosummary over every public module); results pages are generated from
the committed result files before the build reads them (``docs/generate.py``). Warnings are
errors (``-W`` in the Makefile) and every cross-reference must resolve (``nitpicky``); no
inventory is downloaded (``intersphinx`` needs the network), so names of other packages are
listed in ``nitpick_ignore_regex`` instead.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS))

from docstrings import process_docstring, restore_colons  # noqa: E402
from generate import generate_pages  # noqa: E402

import placerl  # noqa: E402

project = "placerl"
author = "the placerl developers"
copyright = "2026, the placerl developers"
release = version = placerl.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autosummary_generate = True
autosummary_imported_members = False
# each name on the page of the module that defines it (a package's re-exports resolve there
# through resolve_reexport)
autodoc_default_options = {
    "members": True,
    "undoc-members": True,
    "show-inheritance": True,
    "ignore-module-all": True,
}
autodoc_inherit_docstrings = False  # Gymnasium's and SB3's docstrings are not placerl's
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
autodoc_mock_imports: list[str] = []
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_use_ivar = True  # "Attributes:" as fields: undoc-members gives each its own entry
napoleon_custom_sections = [("Options", "params_style")]  # a placer's options

nitpicky = True
#: Names of other packages (no intersphinx: the build downloads nothing) and typing aliases.
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(numpy|np|torch|nn|gym|gymnasium|spaces|stable_baselines3|sb3_contrib|"
        r"networkx|nx|pandas|pd|scipy|optuna|hydra|omegaconf|wandb|matplotlib|plt|"
        r"numba|submitit|rich|tqdm|pathlib|os|collections|typing|typing_extensions|"
        r"dataclasses|argparse|subprocess|contextlib|concurrent|multiprocessing|"
        r"threading|enum|abc|types|io|json|re|functools|itertools|logging|datetime|"
        r"zipfile|tempfile|statistics|importlib|torch_geometric|pytest|hypothesis|string)"
        r"(\..*)?",
    ),
    (
        r"py:.*",
        r"(Any|Callable|Iterable|Iterator|Mapping|Sequence|MutableMapping|Generator|"
        r"ClassVar|Literal|Self|TypeVar|Protocol|Path|PathLike|ndarray|Tensor|Module|"
        r"Env|Space|Dict|Box|Discrete|MultiDiscrete|DataFrame|Series|Figure|Axes|"
        r"BaseAlgorithm|BaseCallback|VecEnv|DiGraph|Connection|T|K|V|P|R|F)",
    ),
    (
        r"py:class",
        r"(int|float|str|bool|bytes|dict|list|tuple|set|frozenset|object|type|"
        r"None|callable|optional|default)",
    ),
    # private names (a leading underscore) have no page: a reference to one reads as code
    (r"py:.*", r"(.*\.)?_[A-Za-z].*"),
    # napoleon reads a returned value's description before its colon as a type
    (r"py:class", r".* .*"),
]

html_theme = "furo"
html_title = f"placerl {release}"
html_show_sourcelink = False


def defining_name(target: str, module: str | None, cls: str | None) -> str | None:
    """The dotted name under which a referenced placerl object is defined, or ``None`` when
    there is none other than ``target`` itself.

    ``target`` is absolute (``placerl.agents.make_agent`` -> ``placerl.agents.factory.
    make_agent``), relative to the class or module the reference sits in (``settings`` in an
    env class -> its base class's method), or a bare name one placerl module defines.
    """
    candidates = [f"{module}.{cls}.{target}"] if module and cls else []
    candidates += [f"{module}.{target}"] if module else []
    for name in [*candidates, target]:
        found = _lookup(name)
        if found is not None:
            canonical = _canonical(*found)
            return canonical if canonical not in (target, None) else None
    if "." not in target:  # a bare name: the module that defines it, if exactly one does
        definers = [n for n, m in list(sys.modules.items()) if _defines(m, target)]
        if len(definers) == 1:
            return f"{definers[0]}.{target}"
    return None


def _lookup(name: str) -> tuple[object, str] | None:
    """``(owner, attribute)``: the module or class at dotted ``name`` but its last part, which
    it has; ``None`` when ``name`` names no placerl object."""
    import importlib

    parts = name.split(".")
    if parts[0] != "placerl" or len(parts) < 2:
        return None
    for split in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:-1]:
            owner = getattr(owner, attribute, None)
        if owner is not None and _has(owner, parts[-1]):
            return owner, parts[-1]
        return None
    return None


def _has(owner: object, attribute: str) -> bool:
    """Whether ``owner`` has ``attribute``, a dataclass field without a default included."""
    return hasattr(owner, attribute) or attribute in getattr(owner, "__dataclass_fields__", {})


def _canonical(owner: object, attribute: str) -> str | None:
    """Where ``owner``'s ``attribute`` is defined: a function's or class's own module and
    qualified name; a class member on the class of the MRO that defines it; module data in
    the module whose source assigns it."""
    if isinstance(owner, type):
        for base in owner.__mro__:
            if attribute in vars(base) or attribute in getattr(base, "__annotations__", {}):
                return f"{base.__module__}.{base.__qualname__}.{attribute}"
        return None
    value = getattr(owner, attribute)
    value = getattr(value, "fget", value)  # a property: its getter's
    defined = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    routine = isinstance(value, type) or (callable(value) and isinstance(qualname, str))
    if routine and isinstance(defined, str) and "<" not in str(qualname):
        return f"{defined}.{qualname}"
    definers = [
        n
        for n, m in list(sys.modules.items())
        if _defines(m, attribute) and getattr(m, attribute, None) is value
    ]
    return f"{definers[0]}.{attribute}" if len(definers) == 1 else None


def _defines(module: object, name: str) -> bool:
    """Whether placerl module ``module``'s source defines ``name`` at its top level (an
    assignment, a ``def`` or a ``class``)."""
    import inspect

    if not getattr(module, "__name__", "").startswith("placerl"):
        return False
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return False
    definition = rf"^(?:def\s+|class\s+)?{re.escape(name)}\s*[:=(]"
    return re.search(definition, source, re.M) is not None


def resolve_reexport(app, env, node, contnode):
    """Resolve a reference to a re-exported name (``placerl.agents.make_agent``) or a name a
    module imports (``CompGraph`` in a module that uses it) to its defining module's entry."""
    if node.get("refdomain") != "py":
        return None
    target = defining_name(
        node["reftarget"].lstrip("~."), node.get("py:module"), node.get("py:class")
    )
    if target is None:
        return None
    if re.search(r"\._", target):  # defined in a private module: no page to link, code it is
        return contnode
    domain = env.get_domain("py")
    return domain.resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], target, node, contnode
    )


def setup(app) -> None:
    """Write the generated pages before Sphinx reads the sources, resolve references to
    re-exported names, and read placerl's docstring habits (:mod:`docstrings`)."""
    app.connect("builder-inited", lambda app: generate_pages(DOCS))
    app.connect("missing-reference", resolve_reexport)
    app.connect("autodoc-process-docstring", process_docstring, priority=400)  # before napoleon
    app.connect("autodoc-process-docstring", restore_colons, priority=600)  # after it
