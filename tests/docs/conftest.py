"""The documentation tests import the site's generators from docs/gen/ (they are not part of the package)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

if str(DOCS / "gen") not in sys.path:
    sys.path.insert(0, str(DOCS / "gen"))
