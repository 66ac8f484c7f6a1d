"""``python -m agents`` runs the command-line interface (see :mod:`agents.cli.main`)."""

import sys

from agents.cli.main import main

sys.exit(main())
