"""``python -m radsift.cli``: the ``radsift`` command."""

from radsift.cli import main

main()
