"""``python -m messaging_llm_bot.cli``: the same as ``assistant``."""

import sys

from messaging_llm_bot.cli.main import main

sys.exit(main())
