"""The C accelerator's source for the pgoutput grammar: ``python -m pgwire_spec.pgoutput._cbuild``.

:mod:`pgwire_spec._cgen` is the generic C generator; this module applies it to this
package's grammar and keeps ``pgwire_spec/_speedups.c`` current. After a grammar change::

    python -m pgwire_spec.pgoutput._cbuild          # rewrite pgwire_spec/_speedups.c
    python -m pgwire_spec.pgoutput._cbuild --check  # exit 1 if it is out of date
    pip install -e . --no-deps                      # rebuild the extension
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from .. import _cgen
from . import grammar, messages

__all__ = ["source", "SOURCE_PATH", "main"]

# `python -m pgwire_spec.pgoutput._cbuild` imports the package, which imports this module
# (the codec checks the extension against it), before running it as __main__: harmless.
warnings.filterwarnings(
    "ignore", message="'pgwire_spec.pgoutput._cbuild' found in sys.modules", category=RuntimeWarning
)

#: The committed output of the generator.
SOURCE_PATH: Path = _cgen.SOURCE_PATH


def source() -> str:
    """The C source generated from the pgoutput grammar today."""
    missing = set(grammar.LAYOUTS) - set(messages.MESSAGE_TYPES)
    if missing:
        raise TypeError(f"layouts without a message class: {sorted(missing)}")
    nested = {id(grammar.NESTED[name]): name for name in grammar.NESTED}
    return _cgen.generate_c(grammar.LAYOUTS, nested, "pgwire_spec/pgoutput/grammar.py")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pgwire_spec.pgoutput._cbuild",
                                 description="Regenerate pgwire_spec/_speedups.c from the grammar.")
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed source is out of date")
    args = ap.parse_args(argv)
    text = source()
    current = SOURCE_PATH.read_text() if SOURCE_PATH.exists() else ""
    if args.check:
        if current != text:
            print(f"{SOURCE_PATH} is out of date: run python -m pgwire_spec.pgoutput._cbuild", file=sys.stderr)
            return 1
        return 0
    if current != text:
        SOURCE_PATH.write_text(text)
        print(f"wrote {SOURCE_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
