"""``python -m agents`` runs the command-line interface (see :mod:`agents.cli`)."""

import sys

from .cli import main

sys.exit(main())
