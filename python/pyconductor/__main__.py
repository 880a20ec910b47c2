"""``python -m pyconductor``: the same as the ``pyconductor`` console script."""

from pyconductor.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
