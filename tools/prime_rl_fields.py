"""The dotted field list of prime-rl's `rl` config, read from source: the extractor behind
`tools/upstream.py refresh prime_rl "prime-rl COMMIT"` (adapters/prime_rl/upstream.json), run against checkouts at the
pinned commits (prime-rl, its `deps/verifiers` submodule, and any more package roots such as renderers).

Reads the pydantic config classes by AST (nothing is imported), starting at `RLConfig`. A field whose type
cannot be resolved to a config class (dicts, plugin configs declared `SerializeAsAny`) is recorded as an open
subtree `path.*`: any key below it is accepted."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

ROOT_CLASS = "RLConfig"
_WRAPPERS = {"Annotated", "Optional", "SerializeAsAny", "list", "List", "tuple", "Union", "ClassVar"}


@dataclass
class ClassInfo:
    """One pydantic class: its module, bases, and annotated fields (name -> annotation, default node)."""

    module: str
    name: str
    bases: list[str]
    fields: dict[str, tuple[ast.expr, ast.expr | None]] = field(default_factory=dict)


@dataclass
class Index:
    """All classes and type aliases found, with per-module import maps for name resolution."""

    classes: dict[tuple[str, str], ClassInfo] = field(default_factory=dict)
    aliases: dict[tuple[str, str], ast.expr] = field(default_factory=dict)
    imports: dict[str, dict[str, str]] = field(default_factory=dict)
    by_name: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


def _module_name(root: Path, path: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(parts)


def index_sources(roots: list[Path]) -> Index:
    """Parse every .py file under each root (a directory that contains top-level packages)."""
    idx = Index()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            mod = _module_name(root, path)
            try:
                tree = ast.parse(path.read_text(), filename=str(path))
            except (SyntaxError, UnicodeDecodeError):
                continue
            imports: dict[str, str] = {}
            for node in tree.body:
                if isinstance(node, ast.ImportFrom) and node.module:
                    for alias in node.names:
                        imports[alias.asname or alias.name] = node.module
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        imports[alias.asname or alias.name] = alias.name
                elif isinstance(node, ast.ClassDef):
                    info = ClassInfo(mod, node.name, [ast.unparse(b) for b in node.bases])
                    for stmt in node.body:
                        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                            info.fields[stmt.target.id] = (stmt.annotation, stmt.value)
                    idx.classes[(mod, node.name)] = info
                    idx.by_name.setdefault(node.name, []).append((mod, node.name))
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                    idx.aliases[(mod, node.target.id)] = node.value
                elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    idx.aliases[(mod, node.targets[0].id)] = node.value
            idx.imports[mod] = imports
    return idx


def _lookup(idx: Index, mod: str, name: str) -> tuple[str, str] | None:
    """Resolve a (possibly dotted, e.g. `vf.EnvConfig`) name used in `mod` to a class or alias key."""
    if "." in name:
        head, name = name.split(".", 1)[0], name.rsplit(".", 1)[1]
        package = idx.imports.get(mod, {}).get(head, head)
        inside = [c for c in idx.by_name.get(name, []) if c[0] == package or c[0].startswith(package + ".")]
        if inside:
            return inside[0]
    if (mod, name) in idx.classes or (mod, name) in idx.aliases:
        return (mod, name)
    src = idx.imports.get(mod, {}).get(name)
    if src and ((src, name) in idx.classes or (src, name) in idx.aliases):
        return (src, name)
    cands = idx.by_name.get(name, [])
    if len(cands) == 1:
        return cands[0]
    alias_cands = [k for k in idx.aliases if k[1] == name]
    if len(alias_cands) == 1:
        return alias_cands[0]
    if src:
        prefixed = [c for c in cands if c[0].startswith(src)]
        if prefixed:
            return prefixed[0]
    return cands[0] if cands else None


def _type_classes(idx: Index, mod: str, ann: ast.expr, seen: set[tuple[str, str]]) -> tuple[list[ClassInfo], bool]:
    """Config classes an annotation can hold, and whether part of it is open (dict, unknown class)."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return [], True
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        left, lo = _type_classes(idx, mod, ann.left, seen)
        right, ro = _type_classes(idx, mod, ann.right, seen)
        return left + right, lo or ro
    if isinstance(ann, ast.Subscript):
        head = ast.unparse(ann.value).rsplit(".", 1)[-1]
        if head in ("dict", "Dict", "Mapping"):
            return [], True
        if head == "Literal":
            return [], False
        if head == "SerializeAsAny":
            classes, _ = _type_classes(idx, mod, ann.slice, seen)
            return classes, True
        if head in _WRAPPERS:
            elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            if head == "Annotated":
                elts = elts[:1]
            out: list[ClassInfo] = []
            open_ = False
            for elt in elts:
                c, o = _type_classes(idx, mod, elt, seen)
                out += c
                open_ = open_ or o
            return out, open_
        return _type_classes(idx, mod, ann.value, seen)
    if isinstance(ann, (ast.Name, ast.Attribute)):
        name = ast.unparse(ann)
        if name in ("None", "int", "float", "str", "bool", "Path", "Any") or name.endswith("Float"):
            return [], name == "Any"
        key = _lookup(idx, mod, name)
        if key is None:
            return [], False
        if key in idx.classes:
            info = idx.classes[key]
            return ([info], False) if _is_config(idx, info, set()) else ([], False)
        if key in seen:
            return [], False
        return _type_classes(idx, key[0], idx.aliases[key], seen | {key})
    return [], False


def _is_config(idx: Index, info: ClassInfo, seen: set[tuple[str, str]]) -> bool:
    """True for pydantic models (BaseConfig / BaseModel descendants), false for enums and plain classes."""
    for base in info.bases:
        tail = base.rsplit(".", 1)[-1].split("[", 1)[0]
        if tail in ("BaseConfig", "BaseModel", "BaseSettings"):
            return True
        key = _lookup(idx, info.module, tail)
        if key and key in idx.classes and key not in seen and _is_config(idx, idx.classes[key], seen | {key}):
            return True
    return False


def _all_fields(
    idx: Index, info: ClassInfo, seen: set[tuple[str, str]]
) -> dict[str, tuple[str, ast.expr, ast.expr | None]]:
    """Fields including inherited ones: name -> (defining module, annotation, default)."""
    out: dict[str, tuple[str, ast.expr, ast.expr | None]] = {}
    for base in info.bases:
        key = _lookup(idx, info.module, base.rsplit(".", 1)[-1].split("[", 1)[0])
        if key and key in idx.classes and key not in seen:
            out.update(_all_fields(idx, idx.classes[key], seen | {key}))
    for name, (ann, default) in info.fields.items():
        out[name] = (info.module, ann, default)
    return out


def _default_class(idx: Index, mod: str, default: ast.expr | None) -> list[ClassInfo]:
    """A field defaulting to `SomeConfig()` also accepts SomeConfig's own fields (e.g. env = SingleAgentEnvConfig())."""
    if isinstance(default, ast.Call):
        key = _lookup(idx, mod, ast.unparse(default.func))
        if key and key in idx.classes:
            return [idx.classes[key]]
    return []


def walk(idx: Index, info: ClassInfo, prefix: str, out: set[str], depth: int = 0) -> None:
    """Add every dotted field path reachable from `info` to `out`."""
    if depth > 12:
        return
    for name, (mod, ann, default) in _all_fields(idx, info, {(info.module, info.name)}).items():
        if name.startswith("_"):
            continue
        path = f"{prefix}{name}"
        out.add(path)
        classes, open_ = _type_classes(idx, mod, ann, set())
        classes += _default_class(idx, mod, default)
        if open_:
            out.add(f"{path}.*")
        done: set[tuple[str, str]] = set()
        for cls in classes:
            if (cls.module, cls.name) in done:
                continue
            done.add((cls.module, cls.name))
            walk(idx, cls, f"{path}.", out, depth + 1)


def extract(prime_rl_dir: Path, verifiers_dir: Path, extra: list[Path] | None = None) -> list[str]:
    """Sorted dotted field paths of RLConfig at the given checkouts (plus extra package roots, e.g. renderers)."""
    roots = [prime_rl_dir / "packages" / "prime-rl-configs" / "src", verifiers_dir, *(extra or [])]
    idx = index_sources([r for r in roots if r.exists()])
    roots_found = idx.by_name.get(ROOT_CLASS)
    if not roots_found:
        raise SystemExit(f"{prime_rl_dir}: no class {ROOT_CLASS} found under packages/prime-rl-configs/src")
    out: set[str] = set()
    walk(idx, idx.classes[roots_found[0]], "", out)
    return sorted(out)
