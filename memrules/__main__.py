"""``python -m memrules``: the same as the ``memrules`` command."""

import sys

from memrules._cli import main

sys.exit(main())
