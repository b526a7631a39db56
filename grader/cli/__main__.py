"""`python -m grader.cli ARGS`: the `kata` command."""

import sys

from grader.cli import main

sys.exit(main())
