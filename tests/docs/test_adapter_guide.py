"""The adapter guide (docs/extending/adapter.md) says what the code is: the role vocabulary and the relation fields
of the key-map loader, the file names per phase, and what the two example adapters cost in lines of Python."""

from __future__ import annotations

import re
from pathlib import Path

from benchbed.adapterkit.keymaps import PROCESSES, ROLES, WITHIN, KeyEntry

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "extending" / "adapter.md").read_text()
ADAPTERS = ROOT / "adapters"


def _python_lines(package: str) -> int:
    return sum(len(p.read_text().splitlines()) for p in (ADAPTERS / package).glob("*.py"))


def _table(header: str) -> list[list[str]]:
    """The rows of the guide's table whose header row starts with `header`, as cells."""
    block = GUIDE.split(f"\n{header}", 1)[1].split("\n\n", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in block.splitlines()[2:]]


def test_the_roles_table_is_the_loaders_vocabulary() -> None:
    rows = _table("| role | what the adapter does with the key |")
    assert [r[0].strip("`") for r in rows] == list(ROLES)
    for (_, text), (role, meaning) in zip(rows, ROLES.items(), strict=True):
        assert text.replace("`", "").replace("…", "...").split(" (")[0] == meaning.split(" (")[0], role


def test_the_relations_table_names_every_field_and_value_the_loader_takes() -> None:
    rows = {r[0].strip("`"): r[1] for r in _table("| field | values | used by |")}
    relations = [f for f in KeyEntry.__dataclass_fields__ if f not in ("native", "canonical", "unit", "role")]
    assert list(rows) == [f for f in relations if f not in ("first", "last", "modes", "note")]
    assert all(f'`"{word}"`' in rows["within"] for word in WITHIN)
    assert all(f'`"{name}"`' in rows["process"] for name in PROCESSES)


def test_the_example_adapters_cost_what_the_guide_says() -> None:
    prose = " ".join(GUIDE.split())
    example = re.search(r"a renderer and a parser: (\d+) lines of Python", prose)
    history = re.search(r"a metrics JSONL\): a key map and (\d+) lines of Python", prose)
    assert example and int(example.group(1)) == _python_lines("example")
    assert history and int(history.group(1)) == _python_lines("example_history") <= 150
    page = " ".join((ROOT / "docs" / "frameworks" / "example_history.md").read_text().split())
    assert f"a key map and {_python_lines('example_history')} lines of Python" in page


def test_every_framework_adapter_names_its_phases_with_the_guides_files() -> None:
    """render.py, keymap.toml, discover.py and parse.py in every adapter with a key map; none of the retired names."""
    frameworks = sorted(p.parent.name for p in ADAPTERS.glob("*/keymap.toml"))
    assert {"verl", "slime", "prime_rl", "trl", "example", "example_history"} <= set(frameworks)
    for name in frameworks:
        files = {p.name for p in (ADAPTERS / name).iterdir()}
        assert {"render.py", "keymap.toml", "discover.py", "parse.py"} <= files, name
        assert not files & {"steps.py", "build.py", "artifacts.py"}, name
    assert all((ADAPTERS / name / "emit.py").exists() for name in ("verl", "slime", "prime_rl", "trl"))
