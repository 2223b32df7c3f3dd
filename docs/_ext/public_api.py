"""Sphinx extension: document toolctx under its public names, and check every reference.

The API pages document each object under the name users import it by
(``toolctx.ContextSession``), while docstrings, signatures and class bases name
objects where they are defined (``toolctx.models.ContextPointer``, an annotation's
bare ``datetime``). This extension settles those references; whatever it cannot
settle stays a nitpicky warning, that is a broken reference:

- a name that *is* a documented public object, however it is spelled, links to its
  public page (``toolctx.models.ContextPointer`` -> ``toolctx.ContextPointer``); a
  bare name in a signature is looked up as the documented object's own module sees it;
- a name from another library (``pathlib.Path``, ``pydantic.BaseModel``) is shown as
  plain text, since no other library's inventory is available offline, but only when
  it really imports, so a misspelt one still fails;
- a name inside a private toolctx module (a dotted part starting with ``_``), a type
  variable, or a literal from ``Annotated`` metadata (``0.0``) is shown as plain text;
- class bases that are toolctx internals are replaced by their own bases, so a page
  lists only classes a user can import;
- members public classes inherit from such hidden bases (the fields of a shared
  pydantic base) are listed on the public class;
- constants and instances named in a public module's ``__all__`` are documented
  (autodoc lists only data whose doc comment is in the module being documented),
  with the doc comment found where they are defined;
- pydantic's ``model_config`` is not listed as a member.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from typing import Any, ParamSpec, TypeVar

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.environment import BuildEnvironment
from sphinx.errors import PycodeError
from sphinx.ext.autodoc import DataDocumenter, ModuleDocumenter
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.inspect import object_description

_OWN_PACKAGES = frozenset({"toolctx", "toolctx_langchain", "toolctx_openai_agents"})
_PLAIN_TARGETS = frozenset({"None", "Ellipsis", "..."})
_SKIPPED_MEMBERS = frozenset({"model_config"})
_MISSING = object()
_MAX_VALUE_CHARS = 80


def _modules(app: Sphinx) -> list[str]:
    return list(app.config.public_api_modules)


def _public_names(app: Sphinx) -> dict[int, str]:
    """id(object) -> documented public name, over every public module's ``__all__``."""
    cached: dict[int, str] | None = getattr(app, "_public_api_names", None)
    if cached is not None:
        return cached
    names: dict[int, str] = {}
    for modname in _modules(app):
        try:
            module = importlib.import_module(modname)
        except ImportError:
            continue
        names.setdefault(id(module), modname)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            # Identity means something only for classes and functions: equal
            # constants (two modules' ``0.25``) would alias each other.
            if inspect.isclass(obj) or inspect.isroutine(obj):
                names.setdefault(id(obj), f"{modname}.{name}")
    app._public_api_names = names  # type: ignore[attr-defined]
    return names


def _is_own(dotted: str) -> bool:
    return dotted.split(".", 1)[0] in _OWN_PACKAGES


def _is_private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def _attr(obj: Any, name: str) -> Any:
    try:
        return inspect.getattr_static(obj, name)
    except AttributeError:
        try:
            return getattr(obj, name)
        except Exception:  # any failure means "no such attribute"
            return _MISSING


def _walk(dotted: str) -> tuple[list[Any], list[str]] | None:
    """Import the longest module prefix of ``dotted`` and follow the attributes after it.

    Returns the objects found (the module first) and the names left over where an
    attribute was not found (pydantic fields are not class attributes), or None
    when no prefix imports.
    """
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # ImportError, or a module failing at import
            continue
        objects: list[Any] = [module]
        rest = parts[cut:]
        while rest:
            found = _attr(objects[-1], rest[0])
            if found is _MISSING:
                break
            objects.append(found)
            rest = rest[1:]
        return objects, rest
    return None


def _defining_module(obj: Any) -> str:
    if inspect.ismodule(obj):
        return obj.__name__
    return getattr(obj, "__module__", None) or ""


def _in_context(app: Sphinx, node: pending_xref, name: str) -> Any:
    """A bare ``name`` as the module defining the documented object sees it."""
    modname = node.get("py:module")
    module = sys.modules.get(modname or "")
    if module is None:
        return _MISSING
    owners: list[Any] = []
    cls = node.get("py:class")
    if cls:
        owner: Any = module
        for part in cls.split("."):
            owner = _attr(owner, part)
        owners = [] if owner is _MISSING else [owner]
    else:
        owners = [getattr(module, member, None) for member in getattr(module, "__all__", ())]
    found: dict[int, Any] = {}
    for owner in owners:
        home = sys.modules.get(_defining_module(owner))
        if home is not None and name in vars(home):
            value = vars(home)[name]
            found[id(value)] = value
    return next(iter(found.values())) if len(found) == 1 else _MISSING


def _is_literal(target: str) -> bool:
    try:
        float(target)
    except ValueError:
        return target[:1] in {"'", '"'}
    return True


def _link(
    app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.Element, target: str
) -> nodes.Element | None:
    new_node = node.deepcopy()
    new_node["reftarget"] = target
    return env.get_domain("py").resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], target, new_node, contnode
    )


def _settle(
    app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.Element, dotted: str
) -> nodes.Element | None:
    """Resolve a reference written ``dotted``; None when it names nothing, or nothing documented."""
    walked = _walk(dotted)
    if walked is None:
        return None
    objects, rest = walked
    parts = dotted.split(".")
    if not rest and isinstance(objects[-1], TypeVar | ParamSpec):
        return contnode
    if not _is_own(dotted):
        # Another library: plain text, if the whole name exists.
        return contnode if not rest else None
    public = _public_names(app)
    # The innermost object on the path that has a public name carries the link.
    for depth in range(len(objects) - 1, -1, -1):
        name = public.get(id(objects[depth]))
        if name is not None:
            target = ".".join([name, *parts[len(parts) - len(rest) - (len(objects) - 1 - depth) :]])
            return None if target == dotted else _link(app, env, node, contnode, target)
    if not rest and _is_private(dotted):
        return contnode
    return None


def _resolve(app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.Element) -> nodes.Element | None:
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    if target in _PLAIN_TARGETS or _is_literal(target):
        return contnode
    modname, cls = node.get("py:module"), node.get("py:class")
    candidates = []
    if modname and cls:
        candidates.append(f"{modname}.{cls}.{target}")
    if modname:
        candidates.append(f"{modname}.{target}")
    if "." in target:
        candidates.append(target)
    for dotted in candidates:
        resolved = _settle(app, env, node, contnode, dotted)
        if resolved is not None:
            return resolved
    if "." in target:
        return None
    obj = _in_context(app, node, target)
    if obj is _MISSING:
        return None
    if isinstance(obj, TypeVar | ParamSpec):
        return contnode
    qualname = getattr(obj, "__qualname__", None)
    home = _defining_module(obj)
    if qualname and home:
        return _settle(app, env, node, contnode, f"{home}.{qualname}")
    return None


def _imported_from(modname: str, name: str) -> tuple[str, str] | None:
    """Where ``modname`` imports ``name`` from (``from x import name``), if it does."""
    module = sys.modules.get(modname)
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        return None
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    package = modname if path.endswith("__init__.py") else modname.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    base = package.split(".")
                    if node.level > 1:
                        base = base[: len(base) - node.level + 1]
                    origin = node.module or ""
                    if node.level:
                        origin = ".".join([*base, *([origin] if origin else [])])
                    return origin, alias.name
    return None


def _doc_comment(modname: str, name: str) -> list[str] | None:
    """The doc comment of module-level ``name``, following re-exports to the definition."""
    for _ in range(5):  # a re-export chain is short; this also stops any cycle
        try:
            analyzer = ModuleAnalyzer.for_module(modname)
            analyzer.analyze()
        except PycodeError:
            return None
        comment = analyzer.attr_docs.get(("", name))
        if comment:
            return list(comment)
        origin = _imported_from(modname, name)
        if origin is None:
            return None
        modname, name = origin
    return None


class PublicDataDocumenter(DataDocumenter):
    """Module data named in ``__all__``, with the doc comment from where it is defined."""

    @classmethod
    def can_document_member(cls, member: Any, membername: str, isattr: bool, parent: Any) -> bool:
        if not isinstance(parent, ModuleDocumenter):
            return False
        if isattr:
            return True
        public = membername in (getattr(parent.object, "__all__", None) or ())
        return public and not (inspect.isclass(member) or inspect.isroutine(member) or inspect.ismodule(member))

    def get_module_comment(self, attrname: str) -> list[str] | None:
        return _doc_comment(self.modname, attrname)

    def should_suppress_value_header(self) -> bool:
        # A prompt, a table of patterns or a tool object is read in the source, not in a signature line.
        try:
            shown = object_description(self.object)
        except ValueError:
            return True
        return len(shown) > _MAX_VALUE_CHARS or super().should_suppress_value_header()

    def get_doc(self) -> list[list[str]] | None:
        comment = self.get_module_comment(self.objpath[-1])
        if comment:
            return [comment]
        # Never the docstring of the value's type (``float``, ``FunctionTool``).
        own = getattr(self.object, "__doc__", None)
        if own is None or own == getattr(type(self.object), "__doc__", None):
            return []
        return super().get_doc()


def _register_documenters(app: Sphinx, config: Config) -> None:
    app.add_autodocumenter(PublicDataDocumenter, override=True)


def _public_bases(app: Sphinx, bases: list[type]) -> list[type]:
    """Replace toolctx classes that have no public name by their own bases."""
    public = _public_names(app)
    shown: list[type] = []
    for base in bases:
        if _is_own(base.__module__) and id(base) not in public:
            inner = [b for b in base.__bases__ if b is not object]
            shown.extend(_public_bases(app, inner))
        elif base not in shown:
            shown.append(base)
    return list(dict.fromkeys(shown))


def _process_bases(app: Sphinx, name: str, obj: Any, options: Any, bases: list[type]) -> None:
    bases[:] = _public_bases(app, list(bases)) or [object]


def _hidden(app: Sphinx, cls: type) -> bool:
    """A toolctx class without a public name: its members are shown on its public subclasses."""
    return _is_own(cls.__module__) and id(cls) not in _public_names(app)


def _inherit_from_hidden_bases(app: Sphinx) -> None:
    """List members that public classes inherit from hidden bases (``inherited-members``).

    autodoc's ``inherited-members`` takes the names of the classes whose members are
    *not* listed: every public or foreign class met in a public class's MRO.
    """
    _public_names(app)  # imports the public modules
    excluded: set[str] = set()
    for modname in _modules(app):
        module = sys.modules.get(modname)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if inspect.isclass(obj):
                excluded.update(c.__name__ for c in obj.__mro__[1:] if not _hidden(app, c))
    app.config.autodoc_default_options["inherited-members"] = ",".join(sorted(excluded))


def _skip_member(app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any) -> bool | None:
    if what == "class" and name in _SKIPPED_MEMBERS:
        return True
    return None


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("public_api_modules", [], "env", list)
    # After autodoc registers its own documenters (on config-inited, priority 500).
    app.connect("config-inited", _register_documenters, priority=900)
    app.connect("builder-inited", _inherit_from_hidden_bases)
    app.connect("missing-reference", _resolve)
    app.connect("autodoc-process-bases", _process_bases)
    app.connect("autodoc-skip-member", _skip_member)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
