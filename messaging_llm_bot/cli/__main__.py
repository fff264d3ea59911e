import sys

from assistant_framework.cli import main

sys.exit(main())
