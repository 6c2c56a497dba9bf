"""``python -m memrules``: the same as the ``memrules`` command."""

import sys

from memrules._cli.main import main

sys.exit(main())
