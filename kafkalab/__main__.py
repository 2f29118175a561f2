"""``python -m kafkalab`` is the same as the ``kafkalab`` console script."""

import sys

from kafkalab.tools.cli import main

sys.exit(main())
