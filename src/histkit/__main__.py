import sys

from histkit.cli import main

sys.exit(main())
